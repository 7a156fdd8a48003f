"""Reductions, ArgMax/ArgMin and Softmax/LogSoftmax against TF through the
ctypes harness (symbolic dims, empty reductions, NaN, keep_dims)."""
import numpy as np
import tensorflow as tf

from .opwalk import assert_close

F, I, B = tf.float32, tf.int32, tf.bool
rng = np.random.default_rng(5)


def run(compiler, fn, specs, inputs, tol=1e-5):
    exe, out_dt = compiler.executable(fn, specs)
    got = exe(inputs, out_dt)
    want = fn(*[tf.constant(x) for x in inputs])
    want = want if isinstance(want, (list, tuple)) else [want]
    for k, (g, w) in enumerate(zip(got, want)):
        w = w.numpy()
        if g.dtype.kind == "f":
            assert g.shape == w.shape, (fn.__name__, k, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4, err_msg=f"{fn.__name__} {k}")
        else:
            assert_close(g, w, f"{fn.__name__} output {k}")


S3 = tf.TensorSpec([None, None, None], F)
SHAPES = [(2, 3, 4), (1, 1, 1), (3, 0, 2), (0, 2, 2), (4, 5, 33)]


def reds(x):
    return (tf.reduce_sum(x, -1), tf.reduce_sum(x, [0, 2], keepdims=True), tf.reduce_mean(x, 1),
            tf.reduce_max(x, [1, 2]), tf.reduce_min(x, 0), tf.reduce_prod(x, -2),
            tf.reduce_sum(x, [0, 1, 2]), tf.reduce_mean(x * 2.0 + 1.0, [-1], keepdims=True))


def test_float_reductions(compiler):
    for sh in SHAPES:
        run(compiler, reds, [S3], [rng.standard_normal(sh).astype(np.float32)])


def test_nan_propagates(compiler):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    x[0, 1, 2] = np.nan
    run(compiler, reds, [S3], [x])


def int_bool(x, m):
    return (tf.reduce_sum(x, 1), tf.reduce_max(x, 0), tf.reduce_prod(x, 1),
            tf.reduce_all(m, 1), tf.reduce_any(m, [0]), tf.reduce_mean(x, 1))


def test_int_bool_reductions(compiler):
    spec = [tf.TensorSpec([None, None], I), tf.TensorSpec([None, None], B)]
    for sh in [(3, 4), (2, 1), (0, 3)]:
        run(compiler, int_bool, spec, [rng.integers(-5, 5, sh).astype(np.int32),
                                       rng.integers(0, 2, sh).astype(bool)])


def args(x):
    return tf.argmax(x, -1), tf.argmin(x, 0, output_type=tf.int32)


def test_argmax_argmin(compiler):
    for sh in [(3, 4), (1, 5), (6, 1)]:
        run(compiler, args, [tf.TensorSpec([None, None], F)],
            [rng.integers(-3, 3, sh).astype(np.float32)])


def softmaxes(x):
    return tf.nn.softmax(x), tf.nn.log_softmax(x), tf.nn.softmax(x * 3.0 - 1.0)


def test_softmax(compiler):
    for sh in [(2, 3, 4), (1, 1, 7), (3, 2, 1)]:
        run(compiler, softmaxes, [S3], [rng.standard_normal(sh).astype(np.float32) * 10])


def cumsums(x):
    return (tf.cumsum(x, 1), tf.cumsum(x, 0, exclusive=True), tf.cumsum(x, -1, reverse=True),
            tf.cumsum(x * 2.0, 1, exclusive=True, reverse=True) + 1.0)


def test_cumsum(compiler):
    for sh in [(3, 4), (1, 1), (0, 3), (5, 40)]:
        run(compiler, cumsums, [tf.TensorSpec([None, None], F)],
            [rng.standard_normal(sh).astype(np.float32)])
    ispec = [tf.TensorSpec([None, None, None], I)]
    run(compiler, lambda x: tf.cumsum(x, 1), ispec, [rng.integers(-9, 9, (2, 3, 4)).astype(np.int32)])
