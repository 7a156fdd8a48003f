"""The three kernel loops (flat, rows, general) and the prelude math against
TF, on sizes big enough (about 3e4 elements of ~2.5 estimated cycles each)
that kernels go to the harness's parallel_for, which splits the range in
the middle of rows."""
import numpy as np
import pytest
import tensorflow as tf

F = tf.float32


def _gelu_gate(x, y):
    return tf.nn.gelu(x + y, approximate=True) * tf.sigmoid(y) + tf.math.erfc(x) - tf.exp(y)


CASES = [
    ((3, 111, 101), (101,)),           # bias add: row loop
    ((2, 3, 40, 130), (2, 1, 40, 130)),  # broadcast in a middle dim: row loop, outer wrap
    ((4, 150, 60), (4, 150, 1)),       # broadcast along the last dim: general loop
    ((50, 70, 9), (50, 70, 9)),        # flat loop
    ((2, 5000, 3), (3,)),              # short rows (< 4): general loop
]


@pytest.mark.parametrize("sx,sy", CASES)
def test_loops_match_tf(compiler, sx, sy):
    specs = [tf.TensorSpec([None] * len(sx), F), tf.TensorSpec([None] * len(sy), F)]
    exe, out_dt = compiler.executable(_gelu_gate, specs)
    rng = np.random.default_rng(len(sx) * 100 + len(sy))
    x = (rng.standard_normal(sx) * 3).astype(np.float32)
    y = (rng.standard_normal(sy) * 3).astype(np.float32)
    (got,) = exe([x, y], out_dt)
    want = _gelu_gate(tf.constant(x), tf.constant(y)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert exe.parallel_calls > 0


def test_math_ranges_match_tf(compiler):
    """Wide inputs through every vectorized prelude function (f32 and f64)."""
    def fn(x):
        return [tf.exp(x), tf.math.log(tf.abs(x)), tf.math.log1p(tf.abs(x)), tf.math.expm1(x),
                tf.tanh(x), tf.sigmoid(x), tf.math.erf(x), tf.math.erfc(x), tf.nn.elu(x),
                tf.nn.selu(x), tf.nn.softplus(x)]
    rng = np.random.default_rng(7)
    for dt in (np.float32, np.float64):
        exe, out_dt = compiler.executable(fn, [tf.TensorSpec([None], tf.as_dtype(dt))])
        x = np.concatenate([rng.standard_normal(4000) * 4, rng.uniform(-100, 100, 4000),
                            [0.0, -0.0, np.inf, -np.inf, np.nan, 88.7, -87.5, 1e-30, 1e30]])
        x = x.astype(dt)
        got = exe([x], out_dt)
        want = fn(tf.constant(x))
        for i, (g, w) in enumerate(zip(got, want)):
            w = w.numpy()
            np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=str(i))
            # TF flushes denormal results to zero; compare them as zero.
            tiny = np.finfo(dt).tiny
            g = np.where(np.abs(g) < tiny, 0, g)
            w = np.where(np.abs(w) < tiny, 0, w)
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=str(i))
