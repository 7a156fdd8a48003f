"""Test data for the op walk: edge values per dtype and raw-op call helpers."""
from __future__ import annotations

import numpy as np
import tensorflow as tf
from tensorflow.python.framework import op_def_registry

FLOAT_EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, np.nan, np.inf, -np.inf,
               1e-7, -1e-7, 100.0, -100.0, 20.0, -20.0, 3.0, -3.0, 1e30, -1e30, 7.0]
INT_EDGES = [0, 1, -1, 2, -2, 7, -7, 3, -3, 100, -100]


def values(dtype, shape, rng, nonzero=False, small=False):
    n = int(np.prod(shape))
    np_dt = tf.as_dtype(dtype).as_numpy_dtype
    if dtype == tf.bool:
        return rng.integers(0, 2, shape).astype(bool)
    if tf.as_dtype(dtype).is_floating:
        base = rng.standard_normal(n) * 3
        edges = FLOAT_EDGES
    else:
        base = rng.integers(-50, 50, n)
        edges = INT_EDGES + ([] if small else [np.iinfo(np_dt).max, np.iinfo(np_dt).min])
    base = base.astype(np_dt)
    k = min(n, len(edges))
    base[:k] = np.asarray(edges[:k]).astype(np_dt) if k else base[:k]
    if nonzero:
        base[base == 0] = 3
    if small:
        base = np.abs(base) % 6 if not tf.as_dtype(dtype).is_floating else base
    rng.shuffle(base)
    return base.reshape(shape)


def input_names(op: str) -> list[str]:
    return [a.name for a in op_def_registry.get(op).input_arg]


def call(op: str, *xs, **attrs):
    kw = dict(zip(input_names(op), xs))
    kw.update(attrs)
    return getattr(tf.raw_ops, op)(**kw)


def assert_close(got, want, what):
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=what)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def run_against_tf(compiler, fn, specs, inputs):
    """Compiles fn for specs, runs it on inputs and checks every output
    against fn run eagerly in TF; returns our outputs."""
    exe, out_dt = compiler.executable(fn, specs)
    got = exe(inputs, out_dt)
    want = fn(*[tf.constant(x) for x in inputs])
    want = want if isinstance(want, (list, tuple)) else [want]
    for k, (g, w) in enumerate(zip(got, want)):
        assert_close(g, w.numpy(), f"{fn.__name__} output {k}")
    return got
