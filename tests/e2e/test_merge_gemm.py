"""Merged GEMMs (passes/merge_gemm.py, rt->gemm_multi) through a real
DiscLaunch: Q, K and V projections of one x with variable weights, their
bias / scale / activation / residual epilogues, against stock TF over row
counts incl. one and empty (skinny and Eigen routes, n past the last full
tile), with the merge on and switched off (kernel policy multi_gemm); one compile;
transposed weights (pre-packed B) and fast math run the parts one by one."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import total

ROWS = [1, 0, 8, 13, 33, 64, 129, 200]


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _close(got, want):
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)


def _qkv(hidden: int, n: int, transpose_b: bool = False):
    ws = [tf.Variable(_rand((n, hidden) if transpose_b else (hidden, n), 10 + i))
          for i in range(3)]
    bs = [tf.Variable(_rand((n,), 20 + i)) for i in range(3)]

    @tf.function(input_signature=[tf.TensorSpec([None, hidden], tf.float32),
                                  tf.TensorSpec([None, n], tf.float32)])
    def f(x, r):
        h = tf.tanh(x)  # computed in the cluster: one cluster for all three

        def mm(i):
            return tf.matmul(h, ws[i], transpose_b=transpose_b) + bs[i]
        return mm(0) * 0.125, tf.nn.relu(mm(1)), tf.tanh(mm(2)) + r
    return f


@pytest.mark.parametrize("hidden,n", [(96, 128), (70, 100), (48, 16)])
def test_qkv_matches_tf(disc, hidden, n):
    f = _qkv(hidden, n)
    for i, m in enumerate(ROWS):
        x, r = _rand((m, hidden), i), _rand((m, n), 50 + i)
        want = [t.numpy() for t in f.python_function(x, r)]
        for multi in (True, False):
            with disc.kernel_policy(multi_gemm=multi):
                got = f(x, r)
            for g, w in zip(got, want):
                _close(g.numpy(), w)
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats


def test_transposed_weights_and_fast_math(disc):
    """Pre-packed B (transposed weights) runs each part on the packed kernel;
    fast_math="bf16" each part on the bf16 GEMM (or fp32 without it)."""
    f = _qkv(64, 96, transpose_b=True)
    for i, m in enumerate([1, 7, 40]):
        x, r = _rand((m, 64), i), _rand((m, 96), 9 + i)
        for g, w in zip(f(x, r), f.python_function(x, r)):
            _close(g.numpy(), w.numpy())
    disc.set_options(fast_math="bf16")
    try:
        g = _qkv(64, 96)
        for i, m in enumerate([5, 40]):  # bf16 from 16 rows (gemm_bf16.cc kMinRows)
            x, r = _rand((m, 64), 3 + i), _rand((m, 96), 4 + i)
            # bf16 inputs: |error| <= 2^-7 |x| |w| (~ 2^-7 * 64 here); a
            # part's wrong weight or epilogue is off by ~ 10
            for got, want in zip(g(x, r), g.python_function(x, r)):
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=1.0)
    finally:
        disc.set_options(fast_math="")
    assert total(disc.stats(), "fallbacks") == 0
