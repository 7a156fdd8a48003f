"""Hash-consed dims: a long derived dim is a content-addressed name whose
definition refers to its (interned) parts, so residual chains with symbolic
kernel sizes keep dims, passes and generated code linear in the depth."""
import sys
import time

from blade_disc_tf.compiler.codegen.cpu import generate_source
from blade_disc_tf.compiler.codegen.cpu.host import DimNames
from blade_disc_tf.compiler.frontend import lower_graph
from blade_disc_tf.compiler.passes.pipeline import run_pipeline
from blade_disc_tf.compiler.shapes.symbolic import (INTERN_LEN, ShapeEnv, definition, dim_add,
                                                    dim_max, dim_sub, intern_dim, known_nonneg,
                                                    parse_dim, symbols_of)
from blade_disc_tf.compiler.target import get_target

CPU_PASSES = get_target("cpu").passes()


def _grow(d: str, k: str) -> str:
    """One residual block: bcast(d, f(d)) mentions d twice."""
    return ShapeEnv().broadcast_dim(d, dim_max("0", dim_add(dim_sub(d, k), "1")))


def test_short_dims_stay_text_long_ones_are_named_by_content():
    assert intern_dim("add(s0,1)") == "add(s0,1)"
    long = "add(" + ",".join(f"s{i}" for i in range(60)) + ")"
    name = intern_dim(long)
    assert name != long and len(name) == 17 and name.isidentifier()
    assert intern_dim(long) == name and definition(name) == long
    assert parse_dim(name) == parse_dim(long)
    assert symbols_of(name) == {f"s{i}" for i in range(60)}
    assert known_nonneg(name)


def test_doubling_chain_stays_linear_and_meaningful():
    d = "s0"
    for i in range(40):
        d = _grow(d, f"k{i}")
    assert len(d) <= INTERN_LEN
    assert symbols_of(d) == {"s0"} | {f"k{i}" for i in range(40)}
    # the host evaluates each shared part once: one local per distinct part
    dn = DimNames()
    dn.names.update({s: s for s in symbols_of(d)})
    dn(d)
    assert len(dn.lines) < 40 * 8, len(dn.lines)
    assert sum(len(x) for x in dn.lines) < 40 * 8 * 200


def test_symbolic_kernel_residual_chain_compiles_linearly():
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from test_dim_growth import _residual_chain

    sizes = {}
    for blocks in (10, 30):
        g = _residual_chain(blocks)   # kernel sizes are symbols (no static dims)
        t0 = time.perf_counter()
        func = lower_graph(g, [{"dtype": 1, "rank": 4, "value": None}] * (2 * blocks + 1))
        src = generate_source(run_pipeline(func, CPU_PASSES))
        assert time.perf_counter() - t0 < 20
        assert max(len(d) for d in func.rets[0].shape) <= INTERN_LEN
        sizes[blocks] = len(src)
    # linear: 3x the blocks is about 3x the code (2^20 before interning)
    assert sizes[30] < 4 * sizes[10], sizes


def test_dump_defines_interned_dims_and_parses_back_in_another_process():
    """A printed function defines its interned dims (parts first), so a dump
    read in a process that never interned them still expands every dim."""
    import subprocess

    from blade_disc_tf.compiler.ir import parse_func, print_func

    d = "s0"
    for i in range(6):
        d = _grow(d, f"k{i}")
    assert definition(d) != d
    text = print_func(parse_func(f"func @f(%arg0: f32[{d},3]) {{\n"
                                 f"  %v0 = negate(%arg0) : f32[{d},3]\n  return(%v0)\n}}\n"))
    assert text.startswith("dim e") and text.index(f"dim {d} =") < text.index("func @f")
    script = ("import sys\nfrom blade_disc_tf.compiler.ir import parse_func, print_func\n"
              "from blade_disc_tf.compiler.shapes.symbolic import parse_dim, symbols_of\n"
              "text = sys.stdin.read()\nf = parse_func(text)\nd = f.args[0].type.shape[0]\n"
              "assert print_func(f) == text\nparse_dim(d)\n"
              "print(sorted(symbols_of(d)))\n")
    out = subprocess.run([sys.executable, "-c", script], input=text, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == str(sorted(symbols_of(d)))


def test_dim_definition_must_match_its_name():
    import pytest

    from blade_disc_tf.compiler.ir import parse_func

    long = "add(" + ",".join(f"s{i}" for i in range(60)) + ")"
    bad = f"dim e0123456789abcdef = {long}\nfunc @f(%arg0: f32[3]) {{\n  return(%arg0)\n}}\n"
    with pytest.raises(ValueError, match="not the interned name"):
        parse_func(bad)
