"""Shape speculation (passes/speculate.py): the copy without symbolic
broadcasting, its guard, and both versions run against TF (the guard
picks one per call; only one compile for all shapes)."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler.ir.parser import parse_func
from blade_disc_tf.compiler.ir.verifier import verify
from blade_disc_tf.compiler.passes.pipeline import run_pipeline
from blade_disc_tf.compiler.passes.speculate import speculate
from blade_disc_tf.compiler.target import get_target

CPU_PASSES = get_target("cpu").passes()

from .harness import DiscError

GATE_IR = """func @f(%arg0: f32[s0,s1,s2], %arg1: f32[s3,s4,s5], %arg2: f32[s6]) {
  %v0 = logistic(%arg0) : f32[s0,s1,s2]
  assert_broadcastable() {"lhs": ["s3","s4","s5"],"msg": "m","node": "add","op": "AddV2","rhs": ["s6"]}
  %v1 = broadcast_in_dim(%arg1) {"broadcast_dimensions": [0,1,2]} : f32[s3,s4,bcast(s5,s6)]
  %v2 = broadcast_in_dim(%arg2) {"broadcast_dimensions": [2]} : f32[s3,s4,bcast(s5,s6)]
  %v3 = add(%v1, %v2) : f32[s3,s4,bcast(s5,s6)]
  %v4 = tanh(%v3) : f32[s3,s4,bcast(s5,s6)]
  assert_broadcastable() {"lhs": ["s0","s1","s2"],"msg": "m","node": "mul","op": "Mul","rhs": ["s3","s4","bcast(s5,s6)"]}
  %v5 = broadcast_in_dim(%v0) {"broadcast_dimensions": [0,1,2]} : f32[bcast(s0,s3),bcast(s1,s4),bcast(s2,s5,s6)]
  %v6 = broadcast_in_dim(%v4) {"broadcast_dimensions": [0,1,2]} : f32[bcast(s0,s3),bcast(s1,s4),bcast(s2,s5,s6)]
  %v7 = multiply(%v5, %v6) : f32[bcast(s0,s3),bcast(s1,s4),bcast(s2,s5,s6)]
  return(%v7)
}
"""


def test_gate_speculation_merges_broadcast_dims():
    spec, guard = speculate(verify(parse_func(GATE_IR)))
    verify(spec)
    assert guard == [("s3", "s0"), ("s4", "s1"), ("s5", "s2"), ("s6", "s2")]
    assert spec.rets[0].shape == ("s0", "s1", "s2")
    assert not [o for o in spec.ops if o.name == "assert_broadcastable"]
    assert spec.attrs["speculated"] == [list(g) for g in guard]


def test_gate_is_one_kernel_when_speculated():
    func = run_pipeline(parse_func(GATE_IR), CPU_PASSES)
    assert [o.name for o in func.ops] == ["fusion"]
    general = [o.name for o in func.general.ops if o.name == "fusion"]
    # logistic is materialized before its broadcast; tanh (as cheap as a
    # divide, passes/sink_broadcasts.py) is recomputed inside the multiply.
    assert len(general) == 2


def test_static_conflict_or_nothing_to_merge_is_not_speculated():
    same = """func @f(%arg0: f32[s0,s1], %arg1: f32[s0,s1]) {
  %v0 = add(%arg0, %arg1) : f32[s0,s1]
  return(%v0)
}
"""
    assert speculate(parse_func(same)) is None
    conflict = """func @f(%arg0: f32[s0,3], %arg1: f32[s1]) {
  assert_broadcastable() {"lhs": ["s0","3"],"msg": "m","node": "a","op": "AddV2","rhs": ["s1"]}
  assert_broadcastable() {"lhs": ["s0","4"],"msg": "m","node": "b","op": "AddV2","rhs": ["s1"]}
  %v0 = copy(%arg0) : f32[s0,3]
  return(%v0)
}
"""
    assert speculate(parse_func(conflict)) is None


def test_copy_dropped_when_it_saves_no_kernel():
    bias_add = """func @f(%arg0: f32[s0,s1], %arg1: f32[s2]) {
  assert_broadcastable() {"lhs": ["s0","s1"],"msg": "m","node": "add","op": "AddV2","rhs": ["s2"]}
  %v0 = broadcast_in_dim(%arg0) {"broadcast_dimensions": [0,1]} : f32[s0,bcast(s1,s2)]
  %v1 = broadcast_in_dim(%arg1) {"broadcast_dimensions": [1]} : f32[s0,bcast(s1,s2)]
  %v2 = add(%v0, %v1) : f32[s0,bcast(s1,s2)]
  %v3 = exponential(%v2) : f32[s0,bcast(s1,s2)]
  return(%v3)
}
"""
    assert speculate(parse_func(bias_add)) is not None
    func = run_pipeline(parse_func(bias_add), CPU_PASSES)   # one loop kernel either way
    assert func.general is None and "speculated" not in func.attrs


F = tf.float32
rng = np.random.default_rng(3)


def gate(x, b, g):
    return tf.sigmoid(g) * tf.tanh(x + b)


def layernorm(x, g, b):
    m, v = tf.nn.moments(x, [-1], keepdims=True)
    return (x - m) * tf.math.rsqrt(v + 1e-5) * g + b


def _run(compiler, fn, specs, inputs, tol=1e-5):
    exe, out_dt = compiler.executable(fn, specs)
    (got,) = exe(inputs, out_dt)
    want = fn(*[tf.constant(x) for x in inputs]).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    return exe


S3 = tf.TensorSpec([None, None, None], F)
V = tf.TensorSpec([None], F)


@pytest.mark.parametrize("xs,bs,gs", [
    ((2, 3, 8), (8,), (2, 3, 8)),       # guard holds
    ((4, 5, 768), (768,), (4, 5, 768)),
    ((2, 3, 1), (8,), (2, 3, 8)),       # x's last dim broadcasts
    ((1, 3, 8), (1,), (2, 3, 8)),       # batch and bias broadcast
    ((2, 3, 8), (8,), (2, 1, 1)),       # gate broadcasts
    ((2, 0, 8), (8,), (2, 0, 8)),
])
def test_gate_both_versions_vs_tf(compiler, xs, bs, gs):
    f = lambda r: rng.standard_normal(r).astype(np.float32)  # noqa: E731
    _run(compiler, gate, [S3, V, S3], [f(xs), f(bs), f(gs)])


def test_gate_incompatible_is_tf_error(compiler):
    exe, out_dt = compiler.executable(gate, [S3, V, S3])
    f = lambda r: rng.standard_normal(r).astype(np.float32)  # noqa: E731
    with pytest.raises(DiscError) as e:
        exe([f((2, 3, 8)), f((5,)), f((2, 3, 8))], out_dt)
    assert e.value.code == 3 and "Incompatible shapes" in e.value.message


@pytest.mark.parametrize("xs,c", [((2, 3, 16), 16), ((3, 1, 5), 5), ((2, 4, 1), 6),
                                  ((2, 4, 7), 1)])
def test_layernorm_both_versions_vs_tf(compiler, xs, c):
    f = lambda r: rng.standard_normal(r).astype(np.float32)  # noqa: E731
    _run(compiler, layernorm, [S3, V, V], [f(xs) + 3, f((c,)), f((c,))], tol=2e-4)


def test_derived_dims_are_not_merged():
    # bcast(mul(s0,s1),s2): the guard can only check input dims, so the
    # product is never assumed equal to s2
    text = """func @f(%arg0: f32[s0,s1], %arg1: f32[s2]) {
  %v0 = reshape(%arg0) : f32[mul(s0,s1)]
  assert_broadcastable() {"lhs": ["mul(s0,s1)"],"msg": "m","node": "a","op": "AddV2","rhs": ["s2"]}
  %v1 = broadcast_in_dim(%v0) {"broadcast_dimensions": [0]} : f32[bcast(mul(s0,s1),s2)]
  %v2 = broadcast_in_dim(%arg1) {"broadcast_dimensions": [0]} : f32[bcast(mul(s0,s1),s2)]
  %v3 = add(%v1, %v2) : f32[bcast(mul(s0,s1),s2)]
  return(%v3)
}
"""
    assert speculate(verify(parse_func(text))) is None
