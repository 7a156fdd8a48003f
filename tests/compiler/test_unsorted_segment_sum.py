"""UnsortedSegmentSum (ops/unsorted_segment.py, codegen/cpu/scatter.py) against
TF through the ctypes harness: 1-D and 2-D ids, repeated and negative
(dropped) ids, empty rows, num_segments constant / a run-time scalar / a
shape, dtypes, and TF's errors."""
import numpy as np
import pytest
import tensorflow as tf

from .harness import DiscError
from .opwalk import run_against_tf as run

F = tf.float32
rng = np.random.default_rng(13)


def by_scalar(x, ids, n):
    return tf.math.unsorted_segment_sum(x * 2.0, ids, n) + 1.0


def by_shape(x, ids, uniq):
    """num_segments = the Unique count, as Keras optimizers do."""
    return tf.math.unsorted_segment_sum(x, ids, tf.shape(uniq)[0])


@pytest.mark.parametrize("ids,n", [([0, 2, 2, 1, 0], 4), ([3, -1, 3, -5, 0], 4), ([], 3),
                                   ([1, 1, 1], 2), ([0, 1, 2], 0 + 3), ([-1, -2], 2)])
@pytest.mark.parametrize("k", [1, 5, 0, 70])
def test_values(compiler, ids, n, k):
    ids = np.asarray(ids, np.int32)
    x = rng.standard_normal((len(ids), k)).astype(np.float32)
    run(compiler, by_scalar, [tf.TensorSpec([None, None], F), tf.TensorSpec([None], tf.int32),
                              tf.TensorSpec([], tf.int32)], [x, ids, np.int32(n)])
    run(compiler, by_shape, [tf.TensorSpec([None, None], F), tf.TensorSpec([None], tf.int32),
                             tf.TensorSpec([None], tf.int32)], [x, ids, np.zeros(n, np.int32)])


@pytest.mark.parametrize("dtype", [tf.float64, tf.int32, tf.int64])
def test_2d_ids_and_dtypes(compiler, dtype):
    def fn(x, ids):
        return tf.math.unsorted_segment_sum(x, ids, 5)
    x = (rng.standard_normal((2, 3, 4)) * 10).astype(dtype.as_numpy_dtype)
    ids = np.asarray([[4, 0, -1], [0, 2, 4]], np.int64)
    run(compiler, fn, [tf.TensorSpec([None, None, 4], dtype), tf.TensorSpec([None, None], tf.int64)],
        [x, ids])


@pytest.mark.parametrize("ids,n,msg", [([0, 5, 1], 3, r"segment_ids\[1\] = 5 is out of range \[0, 3\)"),
                                       ([0, 1], -1, "num_segments == -1 must not be negative")])
def test_errors(compiler, ids, n, msg):
    exe, out_dt = compiler.executable(by_scalar, [
        tf.TensorSpec([None, None], F), tf.TensorSpec([None], tf.int32), tf.TensorSpec([], tf.int32)])
    ids = np.asarray(ids, np.int32)
    x = np.ones((len(ids), 2), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match=msg):
        by_scalar(tf.constant(x), tf.constant(ids), tf.constant(n))
    with pytest.raises(DiscError, match=msg):
        exe([x, ids, np.int32(n)], out_dt)


def test_2d_ids_out_of_range_names_the_position(compiler):
    def fn(x, ids):
        return tf.math.unsorted_segment_sum(x, ids, 3)
    exe, out_dt = compiler.executable(fn, [tf.TensorSpec([None, None, 2], F),
                                           tf.TensorSpec([None, None], tf.int32)])
    with pytest.raises(DiscError, match=r"segment_ids\[1,1\] = 5 is out of range \[0, 3\)"):
        exe([np.ones((2, 2, 2), np.float32), np.asarray([[0, 1], [1, 5]], np.int32)], out_dt)
