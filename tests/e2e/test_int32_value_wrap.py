"""Max/min over int32 sums and products of run-time values: TF wraps each op
in int32, the host computes dims in int64 and casts once, which agrees for
add/sub/mul (both mod 2^32) but not for max/min of a wrapped operand.  Those
run as int32 kernels on the wrapped operands instead, as in TF."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler.shapes.symbolic import dim_add, dim_max, dim_val, int32_order_safe
from graph_inspection import total

BIG, SMALL = 2 ** 31 - 1, -2 ** 31
CASES = [(BIG, 1), (BIG, BIG), (SMALL, -1), (65536, 65536), (2, 3), (3, -1), (0, 0)]
I32 = tf.TensorSpec([], tf.int32)


def test_order_safe_dims():
    v0, v1 = dim_val(0, 0, 3), dim_val(1, 0, 3)
    assert int32_order_safe(v0) and int32_order_safe("s0") and int32_order_safe("add(s0,1)")
    assert int32_order_safe(dim_max(v0, v1))
    assert not int32_order_safe(dim_add(v0, v1))
    assert not int32_order_safe(dim_max(dim_add(v0, v1), "0"))


@pytest.mark.parametrize("name,fn", [
    ("max(x+y,0)", lambda x, y: tf.maximum(x + y, 0)),
    ("min(x*y,5)", lambda x, y: tf.minimum(x * y, 5)),
    ("max(x-y,min(x,y))", lambda x, y: tf.maximum(x - y, tf.minimum(x, y))),
    ("max(x,y)+1", lambda x, y: tf.maximum(x, y) + 1),
    ("reduce_max", lambda x, y: tf.reduce_max(tf.stack([x * y, y + 1]))),
])
def test_wraps_like_tf(disc, name, fn):
    disc.enable(min_cluster_size=1)
    f = tf.function(fn, input_signature=[I32, I32])
    for x, y in CASES:
        want = fn(tf.constant(x), tf.constant(y)).numpy()
        assert f(tf.constant(x), tf.constant(y)).numpy() == want, (name, x, y)
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0 and total(stats, "compiles") == 1, stats
