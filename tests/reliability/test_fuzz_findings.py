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


# Subnormal inputs (issue 6d).  TF's CPU kernels run with denormals flushed
# (FTZ/DAZ) and its answer depends on where an element sits: Eigen's packet
# loop does arithmetic, where DAZ reads a subnormal as 0, while the scalar
# tail of each shard calls libm, which decodes the bits (float Log(1e-45) is
# -inf inside a long tensor, -103.97 in a 1-element one; Pow(-1e-45, 0.5) is
# 0 vs NaN).  No single rule matches TF everywhere, so we promise: each
# element equals one of TF's two answers (Log: the packet one; Pow, Atan2,
# Log1p: the libm one), and ops whose TF answer does not depend on the
# position (Sqrt, Mul, float64 Log) equal TF exactly.  Rsqrt's packet answer
# depends on the CPU (on AVX-512 Xeons TF's packet path gives rsqrt(4) =
# 0.49999994, its scalar path 0.5): one of TF's answers too.
SUBNORMAL = {np.float32: [1e-45, -1e-45, 3e-39, -3e-39, 1.1e-38, 0.0, -0.0],
             np.float64: [5e-324, -5e-324, 1e-310, -1e-310, 2e-308, 0.0, -0.0]}
OTHER = [2.0, 0.5, -1.0, 1.0, 3.0, 0.0, -0.5, 1e-45]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,exact", [
    ("log", lambda x, y: tf.math.log(x), False),
    ("log1p", lambda x, y: tf.math.log1p(x), False),
    ("pow", lambda x, y: tf.pow(x, y), False),
    ("pow_exp", lambda x, y: tf.pow(y, x), False),
    ("atan2", lambda x, y: tf.math.atan2(x, y), False),
    ("atan2_x", lambda x, y: tf.math.atan2(y, x), False),
    ("sqrt", lambda x, y: tf.sqrt(x) + tf.sqrt(y * y), True),
    ("rsqrt", lambda x, y: tf.sqrt(x) + tf.math.rsqrt(y * y), False),
    ("mul", lambda x, y: x * y + x, True),
])
def test_subnormal_inputs_get_one_of_tfs_answers(disc, dtype, name, fn, exact):
    subs = np.array(SUBNORMAL[dtype], dtype)
    other = np.array(OTHER, dtype).astype(dtype)
    x = np.repeat(subs, len(other))
    y = np.tile(other, len(subs))
    f = tf.function(fn, input_signature=[tf.TensorSpec([None], tf.as_dtype(dtype))] * 2)
    # TF's scalar-tail answer (1-element tensors) and packet answer (each
    # pair repeated over 256 elements, the first one read).
    scalar = np.array([fn(tf.constant([a]), tf.constant([b])).numpy()[0] for a, b in zip(x, y)])
    packet = np.array([fn(tf.constant(np.full(256, a)), tf.constant(np.full(256, b))).numpy()[0]
                       for a, b in zip(x, y)])
    if exact or (name == "log" and dtype == np.float64):
        np.testing.assert_array_equal(scalar, packet)   # TF is position-independent here
    for reps in (1, 64):   # short tensors (inline kernel) and long (parallel loop)
        got = f(np.tile(x, reps), np.tile(y, reps)).numpy()[:len(x)]
        same = lambda a: ((a == got) & (np.signbit(a) == np.signbit(got))) | \
            (np.isnan(a) & np.isnan(got))  # noqa: E731
        ok = same(packet) | same(scalar)
        assert ok.all(), (name, x[~ok], y[~ok], got[~ok], scalar[~ok], packet[~ok])
    assert counter(disc.stats(), "fallbacks") == 0, disc.stats()


@pytest.mark.parametrize("op", ["ReciprocalGrad", "InvGrad", "RsqrtGrad", "SqrtGrad"])
def test_reciprocal_rsqrt_sqrt_grad_zero_gradient_is_zero(disc, op):
    # fuzz seed 3001590: ReciprocalGrad(1e20, 0) is 0 in TF (Eigen's
    # mul_no_nan), we gave -inf * 0 = NaN.
    vals = np.array([1e20, -1e20, np.inf, -np.inf, 0.0, -0.0, 1e-30, 2.0, np.nan], np.float32)
    y = np.repeat(vals, len(vals))
    dy = np.tile(vals, len(vals))
    fn = lambda y, dy: getattr(tf.raw_ops, op)(y=y * 1.0, dy=dy)  # noqa: E731
    f = tf.function(fn, input_signature=[tf.TensorSpec([None], tf.float32)] * 2)
    want = np.array([fn(tf.constant([a]), tf.constant([b])).numpy()[0] for a, b in zip(y, dy)])
    got = f(y, dy).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)
    assert counter(disc.stats(), "fallbacks") == 0, disc.stats()


def test_int32_mean_sums_in_int64(disc):
    # fuzz seed 3006992: TF's int32 Mean accumulates in int64; we wrapped.
    f = tf.function(lambda x: (tf.reduce_mean(x, axis=1), tf.reduce_mean(x - 1, axis=[0, 1])),
                    input_signature=[tf.TensorSpec([None, None], tf.int32)])
    rng = np.random.default_rng(3)
    big = np.iinfo(np.int32)
    for shape in [(5, 3), (2, 7), (1, 1), (4, 64), (0, 3)]:
        x = rng.choice(np.array([big.max, big.min, big.max - 1, -5, 0, 7], np.int32), shape)
        want = [t.numpy() for t in (tf.reduce_mean(tf.constant(x), axis=1),
                                    tf.reduce_mean(tf.constant(x) - 1, axis=[0, 1]))]
        for g, w in zip(f(x), want):
            np.testing.assert_array_equal(g.numpy(), w)
    assert counter(disc.stats(), "fallbacks") == 0, disc.stats()
    assert counter(disc.stats(), "compiles") == 1, disc.stats()
