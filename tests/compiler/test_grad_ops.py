"""Activation gradients, Bucketize and SoftmaxCrossEntropyWithLogits against
stock TF: every dtype the rule accepts, several shapes (one compile per
rank signature), edge values (NaN, inf, -0) from opwalk.values."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler.ops import bucketize, grads

from .harness import DiscError
from .opwalk import assert_close, call, values
from .opwalk import run_against_tf as run

DTYPES = {1: tf.float32, 2: tf.float64, 3: tf.int32, 9: tf.int64}
SHAPES = [(6, 7), (1, 9), (0, 3), (4, 1)]


@pytest.mark.parametrize("enum", [1, 2, 3, 9])
def test_grad_ops_every_dtype(compiler, enum):
    dtype = DTYPES[enum]
    names = [r.name for r in grads.RULES if enum in [d.tf_enum for d in r.type_attrs["T"]]]

    def fn(a, c):
        return [call(n, a, c) for n in names]
    fn.__name__ = f"grads_{enum}"
    rng = np.random.default_rng(enum)
    spec = [tf.TensorSpec([None, None], dtype)] * 2
    for shape in SHAPES:
        xs = [values(dtype, shape, rng), values(dtype, shape, rng)]
        got = run(compiler, fn, spec, xs)
        assert len(got) == len(names)


def test_grad_ops_reject_different_shapes(compiler):
    def fn(g, f):
        return tf.raw_ops.ReluGrad(gradients=g, features=f)
    spec = [tf.TensorSpec([None, None], tf.float32)] * 2
    exe, dt = compiler.executable(fn, spec)
    with pytest.raises(DiscError, match="g and a must be the same size"):
        exe([np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)], dt)


def test_leaky_relu_grad_alpha(compiler):
    def fn(g, f):
        return tf.raw_ops.LeakyReluGrad(gradients=g, features=f, alpha=0.3)
    rng = np.random.default_rng(3)
    spec = [tf.TensorSpec([None], tf.float32)] * 2
    for n in (1, 17, 64):
        run(compiler, fn, spec, [values(tf.float32, (n,), rng), values(tf.float32, (n,), rng)])


@pytest.mark.parametrize("enum", [1, 2, 3, 9])
def test_bucketize(compiler, enum):
    dtype = DTYPES[enum]
    bounds = [-3.0, -0.5, 0.0, 1.0, 2.5, 7.0, 100.0]

    def fn(x):
        return [tf.raw_ops.Bucketize(input=x, boundaries=bounds),
                tf.raw_ops.Bucketize(input=x, boundaries=[]),
                tf.raw_ops.Bucketize(input=x * 2, boundaries=[1.0])]
    fn.__name__ = f"bucketize_{enum}"
    rng = np.random.default_rng(20 + enum)
    for shape in [(3, 5), (0, 2), (7, 1)]:
        run(compiler, fn, [tf.TensorSpec([None, None], dtype)], [values(dtype, shape, rng)])
    run(compiler, fn, [tf.TensorSpec([None, None], dtype)],
        [np.asarray([[v] for v in bounds], dtype.as_numpy_dtype)])  # exactly on boundaries


def test_bucketize_large_int64_rounds_like_tf(compiler):
    def fn(x):
        return tf.raw_ops.Bucketize(input=x, boundaries=[16777216.0])
    x = np.asarray([2**24 - 1, 2**24, 2**24 + 1, -(2**40)], np.int64)
    run(compiler, fn, [tf.TensorSpec([None], tf.int64)], [x])


def test_bucketize_unsorted_boundaries_is_unsupported(compiler):
    def fn(x):
        return tf.raw_ops.Bucketize(input=x, boundaries=[2.0, 1.0])
    # The compiler refuses (the op then runs in TF, which raises its own error).
    reply = compiler.compile(tf.function(fn).get_concrete_function(
        tf.TensorSpec([None], tf.float32)))
    assert not reply["ok"] and "boundaries are not sorted" in reply["error"]
    assert bucketize.MAX_BOUNDARIES >= 8


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_softmax_cross_entropy(compiler, dtype):
    def fn(logits, labels):
        loss, back = tf.raw_ops.SoftmaxCrossEntropyWithLogits(features=logits, labels=labels)
        return [loss, back]
    rng = np.random.default_rng(5)
    np_dt = dtype.as_numpy_dtype
    spec = [tf.TensorSpec([None, None], dtype)] * 2
    for b, k in [(13, 21), (1, 1), (4, 100), (0, 5), (3, 0)]:
        logits = (rng.standard_normal((b, k)) * 5).astype(np_dt)
        labels = rng.random((b, k)).astype(np_dt)
        labels /= np.maximum(labels.sum(-1, keepdims=True), 1e-3)
        exe, out_dt = compiler.executable(fn, spec)
        got = exe([logits, labels], out_dt)
        want = fn(tf.constant(logits), tf.constant(labels))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)
    # labels broadcast over the batch, as TF allows
    def fn_b(logits, labels):
        return list(tf.raw_ops.SoftmaxCrossEntropyWithLogits(features=logits, labels=labels))
    logits = rng.standard_normal((6, 4)).astype(np_dt)
    labels = np.full((1, 4), 0.25, np_dt)
    exe, out_dt = compiler.executable(fn_b, spec)
    for g, w in zip(exe([logits, labels], out_dt), fn_b(tf.constant(logits), tf.constant(labels))):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)


def _rows_with_non_finite(rng, n_rows, width, np_dt):
    x = rng.standard_normal((n_rows, width)).astype(np_dt)
    for r in range(n_rows):
        k = int(rng.integers(0, 3))
        x[r, rng.integers(0, width, k)] = rng.choice([np.nan, np.inf, -np.inf], k)
    x[0] = -np.inf
    return x


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_softmax_rows_with_inf_and_nan_match_tf(compiler, dtype):
    """f32 Softmax follows oneDNN's AVX-512 kernel (NaN at NaN/+inf
    positions, 0 elsewhere), f64 Softmax and LogSoftmax follow Eigen (the
    whole row NaN).  TF's f32 answer for a row holding NaN or +inf depends on
    the CPU: Eigen's (AVX2-only CPUs, TF's default there) is the whole row
    NaN, oneDNN's AVX2 kernel also puts NaN in some finite lanes of rows
    under 8 wide, its AVX-512 kernel from about 15 wide.  So on such rows ours
    must be NaN at the NaN/+inf positions, NaN only where TF's is, and 0
    elsewhere, as TF's is; every other row and LogSoftmax as TF's."""
    def fn(x):
        return [tf.nn.softmax(x), tf.nn.log_softmax(x)]
    fn.__name__ = f"softmax_nonfinite_{dtype.name}"
    rng = np.random.default_rng(11)
    for width in ((1, 3, 7) if dtype == tf.float32 else (1, 3, 7, 16, 40)):
        x = _rows_with_non_finite(rng, 24, width, dtype.as_numpy_dtype)
        if dtype == tf.float64:
            run(compiler, fn, [tf.TensorSpec([None, None], dtype)], [x])
            continue
        exe, out_dt = compiler.executable(fn, [tf.TensorSpec([None, None], dtype)])
        got, got_log = exe([x], out_dt)
        want, want_log = (w.numpy() for w in fn(tf.constant(x)))
        assert_close(got_log, want_log, f"{fn.__name__} log_softmax")
        poisoned = np.any(np.isnan(x) | (x == np.inf), axis=1)
        assert_close(got[~poisoned], want[~poisoned], f"{fn.__name__} finite rows")
        bad = x[poisoned]
        np.testing.assert_array_equal(np.isnan(got[poisoned]), np.isnan(bad) | (bad == np.inf))
        assert not np.any(np.isnan(got[poisoned]) & ~np.isnan(want[poisoned]))
        assert np.all(np.nan_to_num(got[poisoned], nan=0.0) == 0.0)
        assert np.all(np.nan_to_num(want[poisoned], nan=0.0) == 0.0)
