"""float16/bfloat16 against stock TF: elementwise ops, casts, reductions,
softmax and matmuls compute in float32 and round per op (ops/half.py), so
results must agree with TF to about one unit in the last place of the half
type (rounding of a float32 result that itself differs by an ulp)."""
import ml_dtypes
import numpy as np
import pytest
import tensorflow as tf

from .opwalk import call

HALF = [tf.float16, tf.bfloat16]
# one half-type ulp relative, plus the absolute ulp near zero of float32 math
TOL = {tf.float16: (2.0 ** -10, 1e-6), tf.bfloat16: (2.0 ** -7, 1e-6)}
UNARY = ["Abs", "Neg", "Exp", "Log1p", "Sqrt", "Square", "Tanh", "Sigmoid", "Relu", "Elu",
         "Softplus", "Floor", "Round", "Sign", "Erf", "Sin", "IsNan", "IsFinite"]
BINARY = ["AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow",
          "SquaredDifference", "Less", "Equal", "FloorMod"]


def _np(dtype):
    return ml_dtypes.bfloat16 if dtype == tf.bfloat16 else np.float16


def _vals(dtype, shape, rng, positive=False):
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    flat = x.reshape(-1)
    flat[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.5][:flat.size]
    if positive:
        x = np.abs(x) + 0.5
    return x.astype(_np(dtype))


def _check(got, want, dtype, what, accumulating=False):
    want = want.numpy() if hasattr(want, "numpy") else want
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.dtype, want.dtype)
    if got.dtype.kind == "b" or got.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    g, w = got.astype(np.float32), want.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=what)
    rtol, atol = TOL[dtype]
    if accumulating:  # summation order and where TF rounds partial sums differ
        rtol, atol = 4 * rtol, rtol * float(np.nanmax(np.abs(w), initial=0.0))
    np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=what)


def _run(compiler, fn, specs, inputs, dtype, accumulating=False):
    exe, out_dt = compiler.executable(fn, specs)
    got = exe(inputs, out_dt)
    want = fn(*[tf.constant(x) for x in inputs])
    want = want if isinstance(want, (list, tuple)) else [want]
    for k, (g, w) in enumerate(zip(got, want)):
        _check(g, w, dtype, f"{fn.__name__} output {k}", accumulating)


@pytest.mark.parametrize("dtype", HALF)
def test_elementwise_and_cast(compiler, dtype):
    def fn(x, y):
        out = [call(n, x) for n in UNARY] + [call(n, x, y) for n in BINARY]
        out += [tf.cast(x, tf.float32), tf.cast(x, tf.int32), tf.cast(tf.cast(x, tf.float64) * 3,
                                                                        dtype)]
        return out
    fn.__name__ = f"half_elementwise_{dtype.name}"
    rng = np.random.default_rng(1)
    spec = [tf.TensorSpec([None, None], dtype)] * 2
    for sx, sy in [((5, 6), (5, 6)), ((4, 1), (1, 3)), ((0, 2), (1, 2)), ((1, 1), (1, 1))]:
        x, y = _vals(dtype, sx, rng), _vals(dtype, sy, rng, positive=True)
        x[np.isnan(x.astype(np.float32))] = 0  # TF's Cast of NaN to int is undefined
        _run(compiler, fn, spec, [x, y], dtype)


@pytest.mark.parametrize("dtype", HALF)
def test_reductions_softmax_matmul(compiler, dtype):
    """Reductions and matmuls accumulate in float32 (TF/Eigen do too)."""
    def fn(x, w):
        return [tf.reduce_sum(x, 1), tf.reduce_mean(x, 0), tf.reduce_max(x, 1),
                tf.nn.softmax(x), tf.nn.log_softmax(x), tf.matmul(x, w),
                tf.raw_ops.BatchMatMulV2(x=tf.expand_dims(x, 0), y=tf.expand_dims(w, 0))]
    fn.__name__ = f"half_reduce_{dtype.name}"
    rng = np.random.default_rng(2)
    spec = [tf.TensorSpec([None, None], dtype)] * 2
    for m, k, n in [(3, 4, 5), (1, 64, 1), (7, 100, 3)]:
        x = (rng.standard_normal((m, k))).astype(_np(dtype))
        w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(_np(dtype))
        _run(compiler, fn, spec, [x, w], dtype, accumulating=True)


@pytest.mark.parametrize("dtype", HALF)
def test_constants_of_the_half_type(compiler, dtype):
    """Half Const tensors (a GELU's coefficients, a norm's epsilon, a
    constant table) are read from their TensorProto's 16-bit values."""
    table = np.array([[0.5, -2.0, 3.25]], _np(dtype))

    def elementwise(x):
        return [tf.nn.gelu(x, approximate=True), tf.nn.gelu(x, approximate=False),
                x * tf.constant(table) + 1.5]

    def rms_norm(x):
        return x * tf.math.rsqrt(tf.reduce_mean(x * x, axis=-1, keepdims=True) + 1e-3)
    elementwise.__name__ = f"half_constants_{dtype.name}"
    rms_norm.__name__ = f"half_epsilon_{dtype.name}"
    rng = np.random.default_rng(3)
    spec = [tf.TensorSpec([None, 3], dtype)]
    for rows in (4, 1, 0):
        x = (rng.standard_normal((rows, 3)) * 3).astype(_np(dtype))
        _run(compiler, elementwise, spec, [x], dtype)
        _run(compiler, rms_norm, spec, [x], dtype, accumulating=True)
