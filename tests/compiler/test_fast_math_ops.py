"""registry.FAST_MATH_OPS, the one list of TF ops whose lowering
fast_math="bf16" may change (to a `dot` or a conv `window`): exported per op
in the support table (the rewrite's DiscLaunch fast_math_changes attr, read
by DiscLaunch and the converter), it matches what the lowerings emit, and
the pass marks exactly those IR ops."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler import registry
from blade_disc_tf.compiler.frontend import lower_graph, parse_function_def
from blade_disc_tf.compiler.passes.fast_math import apply_fast_math


def test_support_table_marks_exactly_the_fast_math_ops():
    ops = registry.support_table()["ops"]
    assert ({name for name, entry in ops.items() if entry["fast_math"]}
            == set(registry.FAST_MATH_OPS))
    assert {"MatMul", "BatchMatMulV2", "Einsum", "Conv2D"} <= registry.FAST_MATH_OPS
    assert "DepthwiseConv2dNative" not in registry.FAST_MATH_OPS


def _ir_ops(fn, specs):
    concrete = tf.function(fn).get_concrete_function(*specs)
    g = parse_function_def(concrete.function_def.SerializeToString())
    func = lower_graph(g, [{"dtype": s.dtype.as_datatype_enum, "rank": s.shape.rank,
                            "value": None} for s in specs])
    return func, {n.op for n in g.nodes}


def _changed_ops(func) -> set:
    """IR ops fast math may change: dots and conv windows."""
    return {op.name + ":" + op.attrs.get("kind", "") for op in func.ops
            if op.name == "dot" or (op.name == "window" and op.attrs.get("kind") == "conv")}


F = tf.float32
CASES = [
    (lambda a, b: tf.matmul(a, b), [tf.TensorSpec([None, 4], F), tf.TensorSpec([4, 3], F)]),
    (lambda a, b: tf.einsum("bij,bjk->bik", a, b),
     [tf.TensorSpec([None, 2, 4], F), tf.TensorSpec([None, 4, 3], F)]),
    (lambda x, f: tf.nn.conv2d(x, f, 1, "SAME"),
     [tf.TensorSpec([None, 8, 8, 3], F), tf.TensorSpec([3, 3, 3, 4], F)]),
    (lambda x, f: tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME"),
     [tf.TensorSpec([None, 8, 8, 3], F), tf.TensorSpec([3, 3, 3, 2], F)]),
    (lambda dy, f: tf.raw_ops.Conv2DBackpropInput(
        input_sizes=tf.constant([2, 8, 8, 3]), filter=f, out_backprop=dy, strides=[1, 1, 1, 1],
        padding="SAME"), [tf.TensorSpec([2, 8, 8, 4], F), tf.TensorSpec([3, 3, 3, 4], F)]),
    (lambda x, dy: tf.raw_ops.Conv2DBackpropFilter(
        input=x, filter_sizes=tf.constant([3, 3, 3, 4]), out_backprop=dy, strides=[1, 1, 1, 1],
        padding="SAME"), [tf.TensorSpec([2, 8, 8, 3], F), tf.TensorSpec([2, 8, 8, 4], F)]),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_fast_math_ops_are_what_lowers_to_dot_or_conv(case):
    fn, specs = CASES[case]
    func, tf_ops = _ir_ops(fn, specs)
    changed = _changed_ops(func)
    assert bool(changed) == bool(tf_ops & registry.FAST_MATH_OPS), (tf_ops, changed)
    marked = apply_fast_math(func, "bf16")
    precisions = {op.name + ":" + op.attrs.get("kind", ""): op.attrs.get("precision")
                  for op in marked.ops if op.name in ("dot", "window")}
    assert {k for k, p in precisions.items() if p == "bf16"} == changed, precisions
    assert apply_fast_math(func, "") is func
