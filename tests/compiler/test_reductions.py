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


def masked_softmaxes(x, mask):
    return tf.nn.softmax(x * 0.125 + mask), tf.nn.log_softmax(x + mask)


def test_softmax_rows_with_specials_match_tf(compiler):
    # row lengths around the 16/64-lane blocks, -inf/-1e9 masks (exact 0
    # there, as TF), huge values, NaN, a fully masked row, empty batches
    spec = [tf.TensorSpec([None, None], F)] * 2
    for n in [1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 768, 1000]:
        x = (rng.standard_normal((7, n)) * 10).astype(np.float32)
        mask = np.zeros((7, n), np.float32)
        mask[1, ::3] = -np.inf
        mask[2, ::2] = -1e9
        mask[3] = -np.inf
        x[4, 0] = 1e30
        x[4, -1] = -1e30
        x[5, n // 2] = np.nan
        x[6, ::4] = -1e30
        exe, out_dt = compiler.executable(masked_softmaxes, spec)
        got = exe([x, mask], out_dt)
        want = [w.numpy() for w in masked_softmaxes(tf.constant(x), tf.constant(mask))]
        # the NaN row: NaN there and 0 elsewhere (oneDNN also NaNs a few
        # lanes its vector max saw the NaN in: 7 and 8 of 15, 13, 29, ... of 100)
        nan_row = np.zeros(n, np.float32)
        nan_row[n // 2] = np.nan
        np.testing.assert_array_equal(got[0][5], nan_row)
        tf_nan = np.isnan(want[0][5])
        np.testing.assert_array_equal(got[0][5][~tf_nan], want[0][5][~tf_nan])
        got[0][5], want[0][5] = 0, 0
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"n={n}")
        masked = np.isneginf(mask) | (mask == -1e9)
        np.testing.assert_array_equal(got[0][masked], want[0][masked])
    exe, out_dt = compiler.executable(masked_softmaxes, spec)
    for sh in [(0, 5), (3, 0)]:
        got = exe([np.zeros(sh, np.float32)] * 2, out_dt)
        assert all(g.shape == sh for g in got)


def test_double_softmax_rows_match_tf(compiler):
    # f64 rows: 8-lane max blocks in the loop, Eigen's exp
    spec = [tf.TensorSpec([None, None], tf.float64)] * 2
    exe, out_dt = compiler.executable(masked_softmaxes, spec)
    for n in [1, 7, 31, 32, 33, 100]:
        x = rng.standard_normal((5, n)) * 10
        mask = np.where(rng.random((5, n)) < 0.3, -np.inf, 0.0)
        mask[:, 0] = 0.0
        got = exe([x, mask], out_dt)
        for g, w in zip(got, masked_softmaxes(tf.constant(x), tf.constant(mask))):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-12, atol=1e-14, err_msg=f"n={n}")


def cumsums(x):
    return (tf.cumsum(x, 1), tf.cumsum(x, 0, exclusive=True), tf.cumsum(x, -1, reverse=True),
            tf.cumsum(x * 2.0, 1, exclusive=True, reverse=True) + 1.0)


def test_cumsum(compiler):
    for sh in [(3, 4), (1, 1), (0, 3), (5, 40)]:
        run(compiler, cumsums, [tf.TensorSpec([None, None], F)],
            [rng.standard_normal(sh).astype(np.float32)])
    ispec = [tf.TensorSpec([None, None, None], I)]
    run(compiler, lambda x: tf.cumsum(x, 1), ispec, [rng.integers(-9, 9, (2, 3, 4)).astype(np.int32)])
