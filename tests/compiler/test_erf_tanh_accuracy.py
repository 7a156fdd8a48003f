"""disc_erf(float) (runtime/cpu/prelude/disc_math.h, its Horner steps fused) and
disc_tanh(float) (TF's non-FMA steps) within their documented error of
float64 erf/tanh, compiled as kernels are (same flags, a vectorized loop): a dense grid through the
rational parts and the clamps' tails, |result| <= 1, odd symmetry, and
special values (NaN stays NaN, +-inf gives +-1)."""
import math

import numpy as np
import pytest

from .prelude_loops import compile_loops, float_map, map_loops

_LOOP = map_loops(erf_loop="disc_erf", tanh_loop="disc_tanh")


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return compile_loops(str(tmp_path_factory.mktemp("erf_tanh")), "erf_tanh", _LOOP)


def _grid() -> np.ndarray:
    rng = np.random.default_rng(5)
    x = np.concatenate([np.linspace(0, 10, 1_000_001, dtype=np.float32),
                        np.geomspace(1e-30, 1e-2, 20_001).astype(np.float32),
                        rng.uniform(3.5, 4.5, 200_000).astype(np.float32),
                        rng.uniform(7.5, 20, 100_000).astype(np.float32), [1e30]])
    return np.concatenate([x, -x]).astype(np.float32)


def _errors(got: np.ndarray, x: np.ndarray, ref_fn) -> tuple[np.ndarray, np.ndarray]:
    """(absolute error, error in float32 ulps at the float64 reference)."""
    ref = np.frompyfunc(ref_fn, 1, 1)(x.astype(np.float64)).astype(np.float64)
    ulp = np.spacing(np.maximum(np.abs(ref), np.finfo(np.float32).tiny).astype(np.float32))
    err = np.abs(got.astype(np.float64) - ref)
    return err, err / ulp.astype(np.float64)


@pytest.mark.parametrize("name,ref_fn,max_ulp,max_abs", [
    ("erf", math.erf, 5.5, 3.3e-7), ("tanh", math.tanh, 5.5, 3.3e-7)])
def test_grid_within_bound(lib, name, ref_fn, max_ulp, max_abs):
    x = _grid()
    got = float_map(getattr(lib, f"{name}_loop"))(x)
    err, ulps = _errors(got, x, ref_fn)
    assert ulps.max() <= max_ulp, (ulps.max(), x[ulps.argmax()])
    assert err.max() <= max_abs, (err.max(), x[err.argmax()])
    assert np.abs(got).max() <= 1.0
    half = x.size // 2
    np.testing.assert_array_equal(got[half:], -got[:half])


@pytest.mark.parametrize("name", ["erf", "tanh"])
def test_specials(lib, name):
    f = float_map(getattr(lib, f"{name}_loop"))
    y = f(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-30], np.float32))
    np.testing.assert_array_equal(y[:4], [0.0, -0.0, 1.0, -1.0])
    assert np.signbit(y[1]) and not np.signbit(y[0])
    assert np.isnan(y[4:6]).all()
    assert 0 < y[6] < 2e-30
