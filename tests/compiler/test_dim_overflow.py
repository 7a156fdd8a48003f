"""Derived dims with well-defined int64 arithmetic (codegen/dim_math.py):
a shape whose element count overflows int64 is TF's InvalidArgument error
(as TensorShape reports it), never a wrapped size; a Range whose span
overflows a signed subtraction still gets its exact length."""
import numpy as np
import pytest
import tensorflow as tf

from .harness import DiscError

I64 = tf.TensorSpec([], tf.int64)


def fill_dims(a, b):
    return tf.fill(tf.stack([a, b]), 1.0)


def test_shape_product_overflow_is_invalid_argument(compiler):
    exe, out_dt = compiler.executable(fill_dims, [I64, I64])
    assert exe([np.int64(3), np.int64(4)], out_dt)[0].shape == (3, 4)
    msg = r"Shape \[1099511627776,1099511627776\] would have more than 2\*\*63 - 1 elements"
    with pytest.raises(DiscError, match=msg) as e:
        exe([np.int64(2 ** 40), np.int64(2 ** 40)], out_dt)
    assert e.value.code == 3  # DISC_ERROR_INVALID_ARGUMENT
    with pytest.raises(tf.errors.InvalidArgumentError, match=msg):  # TF's message
        fill_dims(tf.constant(2 ** 40, tf.int64), tf.constant(2 ** 40, tf.int64))
    assert exe([np.int64(0), np.int64(2 ** 40)], out_dt)[0].shape == (0, 2 ** 40)


def flat_dims(a, b, c):
    return tf.reshape(tf.fill(tf.stack([a, b]), 2.0), [-1]), tf.range(a * b * c)


def test_derived_dim_overflow_is_invalid_argument(compiler):
    exe, out_dt = compiler.executable(flat_dims, [I64, I64, I64])
    got = exe([np.int64(2), np.int64(3), np.int64(2)], out_dt)
    assert got[0].tolist() == [2.0] * 6 and got[1].tolist() == list(range(12))
    with pytest.raises(DiscError, match="overflow"):
        exe([np.int64(2 ** 31), np.int64(2 ** 31), np.int64(2 ** 31)], out_dt)


def ranges(s, l, d):
    return tf.range(s, l, d)


def test_range_span_beyond_int64(compiler):
    """limit - start = 2^63 overflows int64; the length is still 4."""
    exe, out_dt = compiler.executable(ranges, [I64, I64, I64])
    got = exe([np.int64(-2 ** 62), np.int64(2 ** 62), np.int64(2 ** 61)], out_dt)[0]
    assert got.tolist() == [-2 ** 62, -2 ** 61, 0, 2 ** 61]
    got = exe([np.int64(2 ** 62), np.int64(-2 ** 62), np.int64(-2 ** 61)], out_dt)[0]
    assert got.tolist() == [2 ** 62, 2 ** 61, 0, -2 ** 61]
    with pytest.raises(DiscError, match=r"Requires \(\(limit - start\) / delta\) <= "):
        exe([np.int64(-2 ** 63), np.int64(2 ** 63 - 1), np.int64(1)], out_dt)
    assert exe([np.int64(5), np.int64(5), np.int64(-3)], out_dt)[0].shape == (0,)


@pytest.mark.parametrize("s,l,d", [(0, 5, 1), (3, 1, -1), (1, 10, 3), (5, 5, 2), (9, 0, -4),
                                   (-7, 7, 5), (0, 1, 2 ** 62)])
def test_range_lengths_match_tf(compiler, s, l, d):
    exe, out_dt = compiler.executable(ranges, [I64, I64, I64])
    got = exe([np.int64(s), np.int64(l), np.int64(d)], out_dt)[0]
    assert got.tolist() == tf.range(np.int64(s), np.int64(l), np.int64(d)).numpy().tolist()
