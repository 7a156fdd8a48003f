"""A library split into translation units (codegen/cpu/source.py
generate_units, built in parallel and linked by build/cache.py) computes
what the one-unit library computes, speculated versions and GEMMs included."""
import re

import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler.build.cache import build
from blade_disc_tf.compiler.codegen.cpu import source as codegen_source
from blade_disc_tf.compiler.codegen.kernel_code import KernelCode
from blade_disc_tf.compiler.codegen.cpu.source import generate_library, generate_source, generate_units
from blade_disc_tf.compiler.errors import CompileError
from blade_disc_tf.compiler import service
from blade_disc_tf.compiler.service import _lower, parallel_units
from blade_disc_tf.compiler.target import get_target

from .harness import Executable

# A kernel function's definition in generated code (kernel_code.py).
_KERNEL_FN = re.compile(r"^void (\w+)\(void\* closure, int64_t begin, int64_t end\) \{$", re.M)

F = tf.float32
S3 = tf.TensorSpec([None, None, None], F)
V = tf.TensorSpec([None], F)
M = tf.TensorSpec([None, None], F)
rng = np.random.default_rng(5)


def layernorm(x, g, b):          # speculated: two versions, stitch kernels
    m, v = tf.nn.moments(x, [-1], keepdims=True)
    return (x - m) * tf.math.rsqrt(v + 1e-5) * g + b


def mlp(x, w, b):                # GEMM with epilogue, elementwise kernels
    h = tf.nn.gelu(tf.matmul(x, w) + b)
    return tf.nn.softmax(h * 2.0 - tf.reduce_max(h)) + tf.exp(-h)


def rows(x):                     # one version: host at global scope
    return tf.nn.softmax(x) * tf.tanh(x) + tf.reduce_sum(tf.exp(x), axis=0)


def stacked(x, w, g, b):         # one layer three times: kernels emitted once
    for _ in range(3):
        x = layernorm(tf.nn.gelu(tf.matmul(x, w) + b) + x, g, b)
    return x


def norm_and_tanh(x, w, g, b, a):  # the general version aliases a speculated kernel
    return layernorm(tf.matmul(x, w) + b, g, b) + tf.reduce_sum(tf.tanh(a) * 2.0 + a)


def _func(fn, specs):
    concrete = tf.function(fn).get_concrete_function(*specs)
    inputs = [{"dtype": t.dtype.as_datatype_enum, "rank": t.shape.rank, "value": None}
              for t in concrete.inputs]
    req = {"function": "f", "key": "k", "inputs": inputs}
    outs = [t.dtype.as_numpy_dtype for t in concrete.outputs]
    return _lower(req, concrete.function_def.SerializeToString(), None, "", get_target("cpu")), outs


@pytest.fixture
def tiny_units(monkeypatch):
    monkeypatch.setattr(codegen_source, "MIN_UNIT_CHARS", 1)


@pytest.mark.parametrize("fn,specs,shapes", [
    (layernorm, [S3, V, V], [[(2, 3, 16), (16,), (16,)], [(3, 1, 5), (5,), (5,)],
                             [(2, 4, 1), (6,), (6,)]]),
    (mlp, [M, M, V], [[(5, 8), (8, 16), (16,)], [(1, 3), (3, 1), (1,)]]),
    (rows, [M], [[(4, 33)], [(1, 1)], [(0, 3)]]),
    (stacked, [M, M, V, V], [[(3, 16), (16, 16), (16,), (16,)], [(5, 1), (1, 1), (1,), (1,)]]),
    (norm_and_tanh, [M, M, V, V, M], [[(3, 8), (8, 8), (8,), (8,), (2, 5)],
                                      [(3, 8), (8, 8), (1,), (8,), (4, 3)]]),
])
def test_units_match_tf(tmp_path, tiny_units, fn, specs, shapes):
    func, outs = _func(fn, specs)
    units = generate_units(func, 3)
    assert len(units) >= 2
    assert sum(u.count("disc_entry(") for u in units) == 1 and "disc_entry(" in units[0]
    path, compiled, _ = build(units, str(tmp_path), "c++", (), False, 120)
    assert compiled
    exe = Executable(path)
    for shape in shapes:
        xs = [rng.standard_normal(s).astype(np.float32) for s in shape]
        (got,) = exe(xs, outs)
        want = fn(*[tf.constant(x) for x in xs]).numpy()
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)


def test_each_kernel_defined_once(tiny_units):
    func, _ = _func(mlp, [M, M, V])
    single = generate_source(func)
    units = generate_units(func, 2)
    defs = [ln for u in units for ln in u.splitlines()
            if ln.startswith("void disc_") and ln.endswith("{")]
    want = [ln for ln in single.splitlines() if ln.startswith("void disc_") and ln.endswith("{")]
    assert sorted(defs) == sorted(want)       # same multiset: each defined once
    assert generate_units(func, 1) == [single]


def test_cache_key_does_not_depend_on_the_split(tmp_path, tiny_units):
    """The split follows CPU load at compile time: a library built as two
    units is the disk-cache hit of the same library asked for as one."""
    func, _ = _func(mlp, [M, M, V])
    single, units = generate_library(func, 2)
    assert single == generate_source(func) and len(units) == 2
    _, compiled, key = build(units, str(tmp_path), "c++", (), False, 120, key_source=single)
    _, again, same = build([single], str(tmp_path), "c++", (), False, 120)
    assert compiled and not again and key == same


def test_small_library_stays_one_unit():
    func, _ = _func(mlp, [M, M, V])
    assert len(generate_units(func, 8)) == 1      # far below MIN_UNIT_CHARS


def test_host_code_counts_toward_a_split(monkeypatch):
    """A library whose kernels alone make one unit's worth still splits
    when its host code (weighted) brings it to two: BERT's 4-layer cluster has
    39 KB of kernels and 76 KB of host code, and one unit took 1.65 s where two
    take 1.0 s.  The host stays in unit 0, kernels go to the other unit."""
    func, _ = _func(stacked, [M, M, V, V])
    versions = codegen_source._render_versions(func)
    kernels = sum(len(k.text) for _, ks, _, _ in versions for k in ks)
    host = int(codegen_source.HOST_WEIGHT * sum(len(c) + len(h) for c, _, _, h in versions))
    monkeypatch.setattr(codegen_source, "MIN_UNIT_CHARS", (kernels + host) // 2)
    assert kernels // codegen_source.MIN_UNIT_CHARS == 1  # kernels alone: one unit
    units = generate_units(func, 2)
    assert len(units) == 2 and "disc_entry(" in units[0] and "disc_entry(" not in units[1]
    assert "void disc_" in units[1]
    monkeypatch.setattr(codegen_source, "MIN_UNIT_CHARS", kernels + host + 1)
    assert len(generate_units(func, 2)) == 1


@pytest.mark.parametrize("samples,want", [([3, 2, 1, 1, 1], 1), ([3, 3, 2, 2, 2], 2),
                                          ([4, 4, 4, 4, 4, 1], 4), ([1, 5], 1)])
def test_runnable_tasks_skips_threads_that_stop_spinning(monkeypatch, samples, want):
    """TF's pool threads spin a few ms before they sleep: the fewest runnable
    tasks over five samples counts them out, busy ones stay (the sixth
    sample is never taken)."""
    seq = iter(samples)
    monkeypatch.setattr(service, "_runnable_now", lambda: next(seq))
    monkeypatch.setattr(service.time, "sleep", lambda s: None)
    assert service._runnable_tasks() == want


def test_kernel_code_renders_under_its_name():
    """A kernel is data: its struct, definitions and declarations (what unit
    0 needs of a kernel another unit defines) follow from the name given."""
    code = KernelCode(("  int64_t n;",), ("  (void)c;",), chunk=8)
    assert code.struct("k") == "struct k_args {\n  int64_t n;\n};\n"
    assert code.text("k") == code.struct("k") + code.definitions("k")
    assert code.definitions("k").startswith(
        "\nvoid k(void* closure, int64_t begin, int64_t end) {\n"
        "  k_args& c = *static_cast<k_args*>(closure);\n  (void)c;\n}\n")
    assert "k(closure, begin * 8, end * 8 < n ? end * 8 : n);" in code.definitions("k")
    assert code.declarations("k") == ["void k(void* closure, int64_t begin, int64_t end);",
                                      "void k_chunks(void* closure, int64_t begin, int64_t end);"]
    assert code.shape() == code.text("DISC_KERNEL") != code.text("k")


def test_unit_that_fails_fails_the_build(tmp_path):
    ok = "int disc_ok() { return 1; }\n"
    with pytest.raises(CompileError, match="C\\+\\+ compile failed"):
        build([ok, "int broken( {\n"], str(tmp_path), "c++", (), False, 60)
    assert not [f for f in tmp_path.iterdir() if f.suffix in (".so", ".o", ".cc")]


@pytest.mark.parametrize("cpus,runnable,want", [(2, 1, 2), (2, 2, 1), (2, 6, 1), (1, 1, 1),
                                                (16, 3, 14)])
def test_parallel_units_uses_idle_cpus(cpus, runnable, want):
    assert parallel_units(cpus, runnable) == want


def _host_spans(source: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the host blocks (HOST_OPT pragmas) in source."""
    begins = [i for i in range(len(source)) if source.startswith("#pragma GCC push_options", i)]
    ends = [source.index("#pragma GCC pop_options", b) for b in begins]
    return list(zip(begins, ends))


@pytest.mark.parametrize("fn,specs,units", [(rows, [M], 1), (layernorm, [S3, V, V], 1),
                                            (layernorm, [S3, V, V], 3), (mlp, [M, M, V], 2)])
def test_host_code_alone_is_compiled_at_host_opt(fn, specs, units, tiny_units):
    """Kernels keep -O3; disc_entry and each version's entry (and nothing
    else) sit inside the HOST_OPT block, whose -O3 build cost a quarter of a
    cold compile."""
    func, _ = _func(fn, specs)
    for source in generate_units(func, units):
        spans = _host_spans(source)
        inside = lambda at: any(b < at < e for b, e in spans)  # noqa: E731
        assert f'#pragma GCC optimize("{codegen_source.HOST_OPT}")' in source or not spans
        for m in _KERNEL_FN.finditer(source):
            assert not inside(m.start()), m.group(1)
        for entry in ("disc_entry(", "entry(const DiscRuntime"):
            for at in [i for i in range(len(source)) if source.startswith(entry, i)]:
                assert inside(at), entry
    assert "disc_entry(" in generate_units(func, units)[0]
