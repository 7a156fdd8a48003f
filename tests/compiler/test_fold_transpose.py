"""Transposes folded into GEMM operand layouts (passes/fold_transpose.py)
and reshapes of buffers as aliases (passes/fusion.py): the IR rewrites, and
multi-head attention against TF over many shapes with the head split read
in place by the GEMM."""
import numpy as np
import tensorflow as tf

from blade_disc_tf.compiler.ir.parser import parse_func
from blade_disc_tf.compiler.ir.verifier import verify
from blade_disc_tf.compiler.passes.dce import dce
from blade_disc_tf.compiler.passes.fold_transpose import fold_transposes, permutation_of
from blade_disc_tf.compiler.passes.pipeline import run_pipeline
from blade_disc_tf.compiler.target import get_target

CPU_PASSES = get_target("cpu").passes()

QK_IR = """func @f(%arg0: f32[s0,s1,4,8], %arg1: f32[s0,s2,4,8]) {
  %v0 = view(%arg0) {"base": "0","strides": ["mul(32,s1)","8","32","1"]} : f32[s0,4,s1,8]
  %v1 = view(%arg1) {"base": "0","strides": ["mul(32,s2)","8","32","1"]} : f32[s0,4,s2,8]
  %v2 = dot(%v0, %v1) {"batch_lhs": [0,1],"batch_rhs": [0,1],"lhs_contract": [3],"lhs_free": [2],"rhs_contract": [3],"rhs_free": [2]} : f32[s0,4,s1,s2]
  return(%v2)
}
"""


def test_head_transposes_fold_into_the_dot():
    func = parse_func(QK_IR)
    assert permutation_of(func.ops[0]) == [0, 2, 1, 3]
    out = verify(dce(fold_transposes(func)))
    (dot,) = out.ops
    assert dot.operands == func.args
    assert dot.attrs["batch_lhs"] == [0, 2] and dot.attrs["lhs_free"] == [1]
    assert dot.attrs["batch_rhs"] == [0, 2] and dot.attrs["rhs_free"] == [1]
    assert dot.attrs["lhs_contract"] == [3] and dot.attrs["rhs_contract"] == [3]


def test_context_transpose_becomes_the_dot_output_layout():
    text = """func @f(%arg0: f32[s0,4,s1,s1], %arg1: f32[s0,4,s1,8]) {
  %v0 = dot(%arg0, %arg1) {"batch_lhs": [0,1],"batch_rhs": [0,1],"lhs_contract": [3],"lhs_free": [2],"rhs_contract": [2],"rhs_free": [3]} : f32[s0,4,s1,8]
  %v1 = view(%v0) {"base": "0","strides": ["mul(32,s1)","8","mul(8,s1)","1"]} : f32[s0,s1,4,8]
  %v2 = exponential(%v1) : f32[s0,s1,4,8]
  return(%v2)
}
"""
    func = verify(dce(fold_transposes(parse_func(text))))
    dot = func.ops[0]
    assert [o.name for o in func.ops] == ["dot", "exponential"]
    assert dot.attrs["result_perm"] == [0, 2, 1, 3] and dot.result.shape == ("s0", "s1", "4", "8")
    # a transpose that moves the rhs free dim off the last position stays
    moved = text.replace('"strides": ["mul(32,s1)","8","mul(8,s1)","1"]} : f32[s0,s1,4,8]',
                         '"strides": ["mul(32,s1)","1","mul(8,s1)","8"]} : f32[s0,8,4,s1]') \
        .replace("exponential(%v1) : f32[s0,s1,4,8]", "exponential(%v1) : f32[s0,8,4,s1]")
    kept = parse_func(moved)
    assert permutation_of(kept.ops[1]) == [0, 3, 1, 2]
    kept = verify(fold_transposes(kept))
    assert [o.name for o in kept.ops] == ["dot", "view", "exponential"]


def test_unsupported_layout_and_offset_views_stay():
    # moving the contract dim away from the innermost position breaks the
    # GEMM's unit-stride rule only when neither group holds the last dim
    text = """func @f(%arg0: f32[s0,s1,s2], %arg1: f32[s0,s2,s3]) {
  %v0 = view(%arg0) {"base": "0","strides": ["1","mul(s0,s2)","s0"]} : f32[s1,s0,s2]
  %v1 = view(%arg1) {"base": "s3","strides": ["mul(s2,s3)","s3","1"]} : f32[s0,s2,s3]
  %v2 = dot(%v0, %v1) {"batch_lhs": [1],"batch_rhs": [0],"lhs_contract": [2],"lhs_free": [0],"rhs_contract": [1],"rhs_free": [2]} : f32[s0,s1,s3]
  return(%v2)
}
"""
    func = parse_func(text)
    assert permutation_of(func.ops[0]) is None      # not a dense permutation
    assert permutation_of(func.ops[1]) is None      # has an offset
    assert verify(fold_transposes(func)).ops[2].operands == [r for o in func.ops[:2]
                                                             for r in o.results]


def test_reshape_of_a_buffer_is_an_alias():
    # dot -> reshape -> dot: the reshape costs no kernel; the first dot's
    # buffer is freed after the second dot, its alias's last reader
    text = """func @f(%arg0: f32[s0,32], %arg1: f32[32,32]) {
  %v0 = dot(%arg0, %arg1) {"batch_lhs": [],"batch_rhs": [],"lhs_contract": [1],"lhs_free": [0],"rhs_contract": [0],"rhs_free": [1]} : f32[s0,32]
  %v1 = reshape(%v0) : f32[s0,4,8]
  %v2 = dot(%v1, %v1) {"batch_lhs": [0],"batch_rhs": [0],"lhs_contract": [2],"lhs_free": [1],"rhs_contract": [2],"rhs_free": [1]} : f32[s0,4,4]
  %v3 = reshape(%v0) : f32[s0,2,16]
  return(%v2, %v3)
}
"""
    func = run_pipeline(parse_func(text), CPU_PASSES)
    assert [o.name for o in func.ops] == ["dot", "reshape", "fusion", "dot"]
    alias, copy, second = func.ops[1:]
    assert second.operands == [alias.result, alias.result]
    assert copy.region.ops[0].name == "reshape"       # returned reshape: a copy kernel
    assert "v0" not in copy.attrs.get("frees", [])
    assert second.attrs["frees"] == ["v0"]            # after the alias's last reader


def attention(x, wq, wk, wv):
    b, s = tf.shape(x)[0], tf.shape(x)[1]

    def heads(t):
        return tf.transpose(tf.reshape(t, [b, s, 4, 8]), [0, 2, 1, 3])
    q, k, v = heads(x @ wq), heads(x @ wk), heads(x @ wv)
    p = tf.nn.softmax(tf.matmul(q, k, transpose_b=True) * 0.35)
    c = tf.transpose(tf.matmul(p, v), [0, 2, 1, 3])
    return tf.reshape(c, [b, s, 32])


def test_attention_vs_tf(compiler):
    specs = [tf.TensorSpec([None, None, 32], tf.float32)] + [tf.TensorSpec([32, 32], tf.float32)] * 3
    exe, out_dt = compiler.executable(attention, specs)
    rng = np.random.default_rng(7)
    for b, s in [(2, 5), (1, 1), (3, 17), (1, 64), (2, 0)]:
        xs = [rng.standard_normal((b, s, 32)).astype(np.float32)] + \
            [(rng.standard_normal((32, 32)) * 0.2).astype(np.float32) for _ in range(3)]
        (got,) = exe(xs, out_dt)
        want = attention(*[tf.constant(x) for x in xs]).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        if b * s:
            # Q·K^T and P·V read the head-transposed layouts directly (P·V
            # writes the context transposed back): per batch element, one
            # GEMM batched over the 4 heads
            heads = [c for c in exe.gemm_calls if c["batch"] == 4]
            assert len(heads) == 2 * b and any(c["trans_b"] for c in heads)
