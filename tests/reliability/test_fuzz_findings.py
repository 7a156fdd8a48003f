"""Regression tests for differential-fuzz findings (python -m tests.fuzz),
each against stock TF on values around the case that failed."""
import numpy as np
import pytest
import tensorflow as tf

from helpers import counter


def _values(rng, n: int) -> np.ndarray:
    edges = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.0000001, -0.9999999, 2.0, -5.88877631790509,
             5.9, -6.0, 27.9, -28.0, 28.5, -30.0, 1e10, -1e200, np.inf, -np.inf, np.nan,
             1e-300, -5e-324]
    x = np.concatenate([rng.standard_normal(n) * s for s in (0.5, 2.0, 6.0)] + [edges])
    rng.shuffle(x)
    return x


@pytest.mark.parametrize("op", [tf.math.erf, tf.math.erfc])
def test_f64_erf_erfc_bitwise_as_tf(disc, op):
    # fuzz seed 202567: Pow(Erf(x), Erf(x)) was NaN where TF gives -1: glibc's
    # erf(-5.89) is -0.9999999999999999, Eigen's (TF's) exactly -1.
    f = tf.function(lambda x: (op(x * 1.0), tf.pow(op(x), op(x))),
                    input_signature=[tf.TensorSpec([None], tf.float64)])
    rng = np.random.default_rng(7)
    for n in (1, 3, 8, 33, 200):
        x = _values(rng, n)
        want = [t.numpy() for t in (op(x * 1.0), tf.pow(op(x), op(x)))]
        got = [t.numpy() for t in f(x)]
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=0)  # pow: 1 ulp
    assert counter(disc.stats(), "fallbacks") == 0, disc.stats()
    assert counter(disc.stats(), "compiles") == 1, disc.stats()
