"""IR text round trip, verifier, and each pass on small IR snippets
(text in -> verified IR out, checked structurally and by printing)."""
import pytest

from blade_disc_tf.compiler.ir import parse_func, print_func, verify
from blade_disc_tf.compiler.ir.verifier import VerifyError
from blade_disc_tf.compiler.passes.buffers import assign_buffers
from blade_disc_tf.compiler.passes.canonicalize import canonicalize
from blade_disc_tf.compiler.passes.cse import cse
from blade_disc_tf.compiler.passes.dce import dce
from blade_disc_tf.compiler.passes.fusion import fuse
from blade_disc_tf.compiler.passes.outputs import materialize_outputs
from blade_disc_tf.compiler.passes.pipeline import run_pipeline
from blade_disc_tf.compiler.target import get_target
from blade_disc_tf.compiler.target.cpu import cheap_to_recompute

CPU_PASSES = get_target("cpu").passes()

SNIPPET = """
func @f(%arg0: f32[s0,s1], %arg1: f32[s2]) {"ret_names": ["a","b"]} {
  %v0 = constant() {"value": [2.0]} : f32[]
  %v1 = broadcast_in_dim(%v0) {"broadcast_dimensions": []} : f32[s0,s1]
  %v2 = multiply(%arg0, %v1) : f32[s0,s1]
  assert_broadcastable() {"lhs": ["s0","s1"],"msg": "Incompatible shapes: {0} vs. {1}","node": "add","op": "AddV2","rhs": ["s2"]}
  %v3 = broadcast_in_dim(%v2) {"broadcast_dimensions": [0,1]} : f32[s0,bcast(s1,s2)]
  %v4 = broadcast_in_dim(%arg1) {"broadcast_dimensions": [1]} : f32[s0,bcast(s1,s2)]
  %v5 = add(%v3, %v4) : f32[s0,bcast(s1,s2)]
  %v6 = exponential(%v5) : f32[s0,bcast(s1,s2)]
  %v7 = compare(%v6, %v5) {"direction": "GT"} : i1[s0,bcast(s1,s2)]
  %v8 = select(%v7, %v6, %v5) : f32[s0,bcast(s1,s2)]
  return(%v8, %arg0)
}
"""


def p(text):
    return verify(parse_func(text))


def test_round_trip():
    f = p(SNIPPET)
    text = print_func(f)
    assert print_func(p(text)) == text
    assert text.strip().splitlines()[0].startswith("func @f(%arg0: f32[s0,s1]")


def test_round_trip_after_full_pipeline():
    f = run_pipeline(p(SNIPPET), CPU_PASSES)
    text = print_func(f)
    assert "fusion(" in text and "yield(" in text
    assert print_func(p(text)) == text


@pytest.mark.parametrize("bad", [
    "func @g(%arg0: f32[s0]) {\n  %v0 = add(%arg0, %v9) : f32[s0]\n  return(%v0)\n}",
    "func @g(%arg0: f32[s0], %arg1: f32[s1]) {\n  %v0 = add(%arg0, %arg1) : f32[s0]\n"
    "  return(%v0)\n}",
    "func @g(%arg0: f32[s0]) {\n  %v0 = compare(%arg0, %arg0) {\"direction\": \"EQ\"} : f32[s0]"
    "\n  return(%v0)\n}",
    "func @g(%arg0: f32[s0]) {\n  %v0 = negate(%arg0) : f32[s7]\n  return(%v0)\n}",
    "func @g(%arg0: f32[s0]) {\n  %v0 = constant() {\"value\": [1.0]} : f32[2]\n"
    "  return(%v0)\n}",
])
def test_verifier_rejects(bad):
    with pytest.raises((VerifyError, ValueError)):
        p(bad)


def test_canonicalize_composes_and_drops_identity_broadcasts():
    f = canonicalize(p("""
func @g(%arg0: f32[s0], %arg1: f32[s1]) {
  %v0 = broadcast_in_dim(%arg0) {"broadcast_dimensions": [0]} : f32[s0]
  %v1 = broadcast_in_dim(%v0) {"broadcast_dimensions": [1]} : f32[s1,s0]
  %v2 = broadcast_in_dim(%v1) {"broadcast_dimensions": [1,2]} : f32[3,s1,s0]
  %v3 = constant() {"value": [1, 2]} : i32[2]
  %v4 = convert(%v3) : f32[2]
  %v5 = convert(%v2) : f32[3,s1,s0]
  return(%v5, %v4)
}"""))
    verify(f)
    ops = {op.name: op for op in f.ops}
    assert [op.name for op in f.ops] == ["broadcast_in_dim"] * 2 + ["constant"] * 2
    assert f.rets[0].name == "v2"
    assert f.ops[1].operands[0].name == "arg0"
    assert f.ops[1].attrs["broadcast_dimensions"] == [2]
    assert ops["constant"].attrs["value"] == [1, 2]
    assert f.ops[-1].name == "constant" and f.ops[-1].attrs["value"] == [1.0, 2.0]


def test_cse_and_dce():
    f = p("""
func @g(%arg0: f32[s0]) {
  %v0 = exponential(%arg0) : f32[s0]
  %v1 = exponential(%arg0) : f32[s0]
  %v2 = add(%v0, %v1) : f32[s0]
  %v3 = negate(%arg0) : f32[s0]
  assert_dim_eq() {"lhs": ["s0"],"msg": "m","node": "n","op": "o","rhs": ["s0"]}
  return(%v2)
}""")
    g = dce(cse(f))
    verify(g)
    assert [op.name for op in g.ops] == ["exponential", "add", "assert_dim_eq"]
    assert g.ops[1].operands == [g.ops[0].result, g.ops[0].result]


def test_materialize_outputs_copies_args_and_duplicates():
    f = materialize_outputs(p("""
func @g(%arg0: f32[s0]) {
  %v0 = negate(%arg0) : f32[s0]
  return(%v0, %v0, %arg0)
}"""))
    verify(f)
    assert [op.name for op in f.ops] == ["negate", "copy", "copy"]
    assert len(set(f.rets)) == 3


def test_fusion_groups_by_shape_and_level():
    f = p(SNIPPET)
    for name, fn in CPU_PASSES[:3]:
        f = verify(fn(f))
    f = verify(materialize_outputs(f))
    f = verify(fuse(f))
    fusions = [op for op in f.ops if op.name == "fusion"]
    # v2 feeds a broadcast: materialized, in one kernel with the copy of
    # %arg0 (same shape, level 0); the rest at the broadcast shape is one.
    assert len(fusions) == 2
    assert [op.results[0].shape for op in fusions] == [("s0", "s1"), ("s0", "bcast(s1,s2)")]
    last = fusions[-1]
    assert {o.name for o in last.region.ops} >= {"add", "exponential", "compare", "select"}
    assert [op.name for op in f.ops][:2] == ["constant", "assert_broadcastable"]
    f = verify(assign_buffers(f))
    assert fusions[-1].attrs["kernel"] == 1
    bufs = [op.attrs["buffers"] for op in f.ops if op.name == "fusion"]
    assert sorted(sum(bufs, [])) == ["out:0", "out:1", "temp"]


def test_pipeline_dumps(tmp_path):
    run_pipeline(p(SNIPPET), CPU_PASSES, str(tmp_path))
    for d in (tmp_path, tmp_path / "speculated"):   # the general and the speculated version
        names = sorted(x.name for x in d.iterdir() if x.is_file())
        assert names[0] == "ir_00_input.mlir"
        assert len(names) == len(CPU_PASSES) + 1


def _breaks_types(func):
    """A faulty pass: the first multiply claims a rank-1 result."""
    import dataclasses
    from blade_disc_tf.compiler.ir.core import TensorType, Value
    ops = list(func.ops)
    i = next(i for i, op in enumerate(ops) if op.name == "multiply")
    r = ops[i].result
    bad = Value(r.name, TensorType(r.dtype, ("s9",)))
    ops[i] = dataclasses.replace(ops[i], results=[bad])
    return dataclasses.replace(func, ops=ops)


@pytest.mark.parametrize("verify_each,blamed", [(True, "after pass broken"),
                                                (False, "after pass dce")])
def test_pipeline_verifies_the_result_or_every_pass(verify_each, blamed):
    """The result is always verified (a faulty pass cannot reach codegen);
    verify_each (and dumping) checks every step and names the faulty one."""
    steps = [("canonicalize", canonicalize), ("broken", _breaks_types), ("dce", dce)]
    with pytest.raises(VerifyError, match=blamed):
        run_pipeline(p(SNIPPET), steps, verify_each=verify_each, speculated=False)
    assert run_pipeline(p(SNIPPET), [("canonicalize", canonicalize), ("dce", dce)],
                        speculated=False).ops


def test_sink_broadcasts_then_single_kernel():
    from blade_disc_tf.compiler.passes.sink_broadcasts import sink_broadcasts
    f = verify(sink_broadcasts(p(SNIPPET), cheap=cheap_to_recompute))
    names = [op.name for op in f.ops]
    # multiply now runs at the broadcast shape on broadcast operands.
    mul = f.ops[names.index("multiply")]
    assert mul.result.shape == ("s0", "bcast(s1,s2)")
    assert all(v.name != "v2" for op in f.ops for v in op.operands)
    g = run_pipeline(p(SNIPPET), CPU_PASSES)
    fusions = [op for op in g.general.ops if op.name == "fusion"]
    assert sorted(op.attrs["buffers"] for op in fusions) == [["out:0"], ["out:1"]]
    # speculated (s2 == s1): one kernel writes both outputs
    assert [op.attrs["buffers"] for op in g.ops if op.name == "fusion"] == [["out:0", "out:1"]]


def test_sink_keeps_expensive_ops():
    from blade_disc_tf.compiler.passes.sink_broadcasts import sink_broadcasts
    f = p("""
func @g(%arg0: f32[s0], %arg1: f32[s1,s0]) {
  %v0 = exponential(%arg0) : f32[s0]
  %v1 = broadcast_in_dim(%v0) {"broadcast_dimensions": [1]} : f32[s1,s0]
  %v2 = add(%v1, %arg1) : f32[s1,s0]
  return(%v2)
}""")
    assert print_func(verify(sink_broadcasts(f, cheap=cheap_to_recompute))) == print_func(f)
