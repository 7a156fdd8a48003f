"""disc_exp_fast (the Softmax/LogSoftmax exp, runtime/cpu/prelude/disc_math.h) within
its documented 1.5 ulp of the true exp, compiled as kernels are (same flags, a
vectorized loop), over a dense sweep of [-86.98, 88.72], 0 below (oneDNN's
flush) and the special values."""
import numpy as np
import pytest

import tensorflow as tf

from blade_disc_tf.compiler.codegen.cpu.source import generate_source
from blade_disc_tf.compiler.frontend import lower_graph, parse_function_def
from blade_disc_tf.compiler.passes.pipeline import run_pipeline
from blade_disc_tf.compiler.target import get_target

CPU_PASSES = get_target("cpu").passes()

from .prelude_loops import compile_loops, float_map, map_loops

_LOOP = map_loops(fast_exp="disc_exp_fast", fast_exp_nonpos="disc_exp_fast_nonpos",
                  fast_exp_nonpos_nan_free="disc_exp_fast_nonpos_nan_free")


@pytest.fixture(scope="module")
def exp_lib(tmp_path_factory):
    return compile_loops(str(tmp_path_factory.mktemp("fast_exp")), "fast_exp", _LOOP)


@pytest.fixture(scope="module")
def fast_exp(exp_lib):
    return float_map(exp_lib.fast_exp)


@pytest.fixture(scope="module")
def fast_exp_nonpos(exp_lib):
    return float_map(exp_lib.fast_exp_nonpos)


@pytest.fixture(scope="module")
def fast_exp_nonpos_nan_free(exp_lib):
    return float_map(exp_lib.fast_exp_nonpos_nan_free)


def _ulp_error(got: np.ndarray, x: np.ndarray) -> np.ndarray:
    """|got - exp(x)| in units of the float32 ulp at exp(x) (subnormal ulp
    2^-149 below the normal range), exp(x) in float64."""
    ref = np.exp(x.astype(np.float64))
    ulp = np.spacing(np.maximum(ref, np.finfo(np.float32).tiny).astype(np.float32))
    return np.abs(got.astype(np.float64) - ref) / ulp.astype(np.float64)


def test_dense_sweep_within_bound(fast_exp):
    # every 64th float32 of [-86.98, 88.72] plus random points, all finite results
    lo, hi = np.float32(-86.98), np.float32(88.72)
    bits = np.arange(np.float32(0).view(np.int32), lo.view(np.int32), 64, dtype=np.int32)
    neg = bits.view(np.float32) * np.float32(-1)
    pos = np.arange(0, hi.view(np.int32), 64, dtype=np.int32).view(np.float32)
    rnd = np.random.default_rng(12).uniform(lo, hi, 1 << 20).astype(np.float32)
    x = np.concatenate([neg, pos, rnd])
    err = _ulp_error(fast_exp(x), x)
    assert err.max() <= 1.5, (err.max(), x[err.argmax()])
    assert err.mean() < 0.3


def test_specials(fast_exp):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 89.0, 88.8, 1e30,
                  -104.0001, -200.0, -1e30, -87.0, -103.9, -86.9, 88.72, -1e-30], np.float32)
    y = fast_exp(x)
    np.testing.assert_array_equal(y[:4], [1.0, 1.0, np.inf, 0.0])
    assert np.isnan(y[4:6]).all()
    np.testing.assert_array_equal(y[6:14], [np.inf] * 3 + [0.0] * 5)
    assert (_ulp_error(y[14:], x[14:]) <= 1.5).all()
    # results under 2^-125.5 flush to 0 (no subnormal garbage), above stay exact
    flushed = np.linspace(-103.9, -87.0, 4001, dtype=np.float32)
    np.testing.assert_array_equal(fast_exp(flushed), 0.0)
    edge = np.linspace(-86.98, -80.0, 4001, dtype=np.float32)
    assert _ulp_error(fast_exp(edge), edge).max() <= 1.5


def _nonpos_domain() -> np.ndarray:
    """Every 97th float of [-1e30, 0], the specials and the flush edges."""
    bits = np.arange(np.float32(0).view(np.int32), np.float32(-1e30).view(np.int32), 97,
                     dtype=np.int32)
    return np.concatenate([bits.view(np.float32) * np.float32(-1),
                           np.array([0.0, -0.0, -np.inf, -87.0, -86.98, -87.34, -87.68,
                                     -87.7, -88.0, -88.01], np.float32)])


def test_nonpos_variant_matches_on_its_domain(fast_exp, fast_exp_nonpos):
    # softmax's exp(x - rowmax): x <= 0 or NaN; the same bits as
    # disc_exp_fast wherever that is normal (x >= -86.98), 0 at -inf
    x = _nonpos_domain()
    y, ref = fast_exp_nonpos(x), fast_exp(x)
    normal = x >= np.float32(-86.98)
    np.testing.assert_array_equal(y[normal], ref[normal])
    np.testing.assert_array_equal(fast_exp_nonpos(np.array([0.0, -0.0, -np.inf], np.float32)),
                                  [1.0, 1.0, 0.0])
    assert np.isnan(fast_exp_nonpos(np.array([np.nan, -np.nan], np.float32))).all()


def test_nonpos_tail_subnormal_then_zero(fast_exp_nonpos):
    # below disc_exp_fast's flush: exp(x) within 1.5 subnormal ulps down to
    # -87.68 (n = -126), exactly 0 from the clamp's n = -127 on
    tail = np.linspace(-87.68, -86.98, 4001, dtype=np.float32)
    assert _ulp_error(fast_exp_nonpos(tail), tail).max() <= 1.5
    assert (fast_exp_nonpos(np.float32([-87.34, -87.5])) > 0).all()
    zero = np.concatenate([np.linspace(-200.0, -87.69, 4001, dtype=np.float32),
                           np.float32([-1e30, -np.finfo(np.float32).max, -np.inf])])
    np.testing.assert_array_equal(fast_exp_nonpos(zero), 0.0)


def test_nan_free_variant_matches_nonpos_except_nan(fast_exp_nonpos, fast_exp_nonpos_nan_free):
    # the unsigned-min clamp: the same bits for every x <= 0 (and +0); a NaN
    # x may give anything (its caller replaces that result)
    x = np.concatenate([_nonpos_domain(), np.linspace(-90.0, 0.0, 100001, dtype=np.float32)])
    np.testing.assert_array_equal(fast_exp_nonpos_nan_free(x), fast_exp_nonpos(x))


def _kernel_source(fn, dtype) -> str:
    spec = tf.TensorSpec([None, None], dtype)
    fdef = tf.function(fn, input_signature=[spec]).get_concrete_function().function_def
    func = lower_graph(parse_function_def(fdef.SerializeToString()),
                       [{"dtype": dtype.as_datatype_enum, "rank": 2, "value": None}])
    return generate_source(run_pipeline(func, CPU_PASSES))


@pytest.mark.parametrize("dtype,fast", [(tf.float32, True), (tf.float16, True),
                                        (tf.bfloat16, True), (tf.float64, False)])
def test_softmax_uses_fast_exp_only_where_tf_runs_onednn(dtype, fast):
    """f32 Softmax/LogSoftmax (half types compute in f32) call disc_exp_fast,
    as its x - rowmax(x) variants; f64 and tf.exp itself keep Eigen's
    bitwise disc_exp, and an exp of anything else the clamped one.  (The
    prelude that defines them all is a header the source only includes.)"""
    # Softmax selects +inf for a NaN x itself (the _nan_free clamp);
    # LogSoftmax's row sum must see exp(NaN) = NaN
    for fn, variant in ((tf.nn.softmax, "nonpos_nan_free"), (tf.nn.log_softmax, "nonpos")):
        src = _kernel_source(lambda x: fn(x) * x, dtype)
        assert (f"disc_exp_fast_{variant}(" in src) == fast
        assert ("disc_exp(" in src) != fast
    src = _kernel_source(lambda x: tf.exp(x) * x, dtype)
    assert "disc_exp(" in src and "disc_exp_fast" not in src
