"""registry.DOT_OPS, the one list of TF ops that may lower to a `dot` (what
fast_math="bf16" changes): exported per op in the support table (the
rewrite's DiscLaunch fast_math_changes attr, read by DiscLaunch and the
converter), and it matches what the lowerings emit."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler import registry
from blade_disc_tf.compiler.frontend import lower_graph, parse_function_def


def test_support_table_marks_exactly_the_dot_ops():
    ops = registry.support_table()["ops"]
    assert {name for name, entry in ops.items() if entry["dot"]} == set(registry.DOT_OPS)
    assert {"MatMul", "BatchMatMulV2", "Einsum"} <= registry.DOT_OPS


def _ir_ops(fn, specs):
    concrete = tf.function(fn).get_concrete_function(*specs)
    g = parse_function_def(concrete.function_def.SerializeToString())
    func = lower_graph(g, [{"dtype": s.dtype.as_datatype_enum, "rank": s.shape.rank,
                            "value": None} for s in specs])
    return {op.name for op in func.ops}, {n.op for n in g.nodes}


F = tf.float32
CASES = [
    (lambda a, b: tf.matmul(a, b), [tf.TensorSpec([None, 4], F), tf.TensorSpec([4, 3], F)]),
    (lambda a, b: tf.einsum("bij,bjk->bik", a, b),
     [tf.TensorSpec([None, 2, 4], F), tf.TensorSpec([None, 4, 3], F)]),
    (lambda x, f: tf.nn.conv2d(x, f, 1, "SAME"),
     [tf.TensorSpec([None, 8, 8, 3], F), tf.TensorSpec([3, 3, 3, 4], F)]),
    (lambda dy, f: tf.raw_ops.Conv2DBackpropInput(
        input_sizes=tf.constant([2, 8, 8, 3]), filter=f, out_backprop=dy, strides=[1, 1, 1, 1],
        padding="SAME"), [tf.TensorSpec([2, 8, 8, 4], F), tf.TensorSpec([3, 3, 3, 4], F)]),
    (lambda x, dy: tf.raw_ops.Conv2DBackpropFilter(
        input=x, filter_sizes=tf.constant([3, 3, 3, 4]), out_backprop=dy, strides=[1, 1, 1, 1],
        padding="SAME"), [tf.TensorSpec([2, 8, 8, 3], F), tf.TensorSpec([2, 8, 8, 4], F)]),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_dot_ops_are_what_lowers_to_dot(case):
    fn, specs = CASES[case]
    ir_ops, tf_ops = _ir_ops(fn, specs)
    assert ("dot" in ir_ops) == bool(tf_ops & registry.DOT_OPS), (tf_ops, ir_ops)
