"""SparseSegmentSum/Mean/SqrtN (+ WithNumSegments) compiled: the output rows
come from the segment id values (read at run time), so one executable
serves every size; bad ids/indices are TF's InvalidArgumentError."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import total

OPS = {"sum": (tf.raw_ops.SparseSegmentSum, tf.raw_ops.SparseSegmentSumWithNumSegments),
       "mean": (tf.raw_ops.SparseSegmentMean, tf.raw_ops.SparseSegmentMeanWithNumSegments),
       "sqrtn": (tf.raw_ops.SparseSegmentSqrtN, tf.raw_ops.SparseSegmentSqrtNWithNumSegments)}


def _fn(kind, with_num, dtype=tf.float32, idx=tf.int32, seg=tf.int64):
    op = OPS[kind][1 if with_num else 0]
    spec = [tf.TensorSpec([None, None, 3], dtype), tf.TensorSpec([None], idx),
            tf.TensorSpec([None], seg)]
    if with_num:
        @tf.function(input_signature=spec + [tf.TensorSpec([], tf.int32)])
        def f(x, i, s, n):
            return op(data=x * 2.0, indices=i, segment_ids=s, num_segments=n) + 1.0
    else:
        @tf.function(input_signature=spec)
        def f(x, i, s):
            return op(data=x * 2.0, indices=i, segment_ids=s) + 1.0
    return f


def _case(rng, rows, n, nseg, dtype, idx, seg):
    x = rng.standard_normal((rows, 2, 3)).astype(dtype)
    i = rng.integers(0, rows, n).astype(idx)
    s = np.sort(rng.integers(0, max(nseg, 1), n)).astype(seg)
    return x, i, s


@pytest.mark.parametrize("kind", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("with_num", [False, True])
def test_matches_tf_with_one_compile(disc, kind, with_num):
    dt = np.float64 if kind == "mean" else np.float32
    i_dt = np.int64 if kind == "sqrtn" else np.int32
    s_dt = np.int32 if kind == "sum" else np.int64
    f = _fn(kind, with_num, tf.as_dtype(dt), tf.as_dtype(i_dt), tf.as_dtype(s_dt))
    rng = np.random.default_rng(3)
    for rows, n, nseg in ((5, 0, 0), (5, 1, 1), (4, 6, 3), (9, 20, 7), (1, 3, 1), (6, 13, 13),
                          (3, 8, 2), (8, 30, 11)):
        x, i, s = _case(rng, rows, n, nseg, dt, i_dt, s_dt)
        args = [x, i, s] + ([np.int32(nseg + 2)] if with_num else [])
        want = f.python_function(*[tf.constant(a) for a in args]).numpy()
        got = f(*args).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    assert total(stats, "compiles") == 1, stats


@pytest.mark.parametrize("i,s,words", [([0, 1, 2], [0, 2, 1], "not increasing|not sorted"),
                                       ([0, 1, 2], [-1, 0, 0], "must be >= 0|out of range"),
                                       ([0, 7, 2], [0, 0, 1], "out of range"),
                                       ([0, 1], [0, 0, 1], "same size")])
def test_bad_ids_are_tf_errors(disc, i, s, words):
    f = _fn("mean", False)
    x = np.ones((4, 2, 3), np.float32)
    f(x, np.array([0, 1], np.int32), np.array([0, 1], np.int64))
    args = (x, np.array(i, np.int32), np.array(s, np.int64))
    with pytest.raises(tf.errors.InvalidArgumentError, match=words) as e:
        f(*args).numpy()
    assert "SparseSegmentMean" in str(e.value)
    with pytest.raises(tf.errors.InvalidArgumentError):
        f.python_function(*[tf.constant(a) for a in args])
    assert total(disc.stats(), "compiles") == 1
