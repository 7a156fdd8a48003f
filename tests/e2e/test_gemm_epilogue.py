"""GEMM epilogues through a real DiscLaunch: bias + activation + residual
kernels run by the runtime on each tile of C (rt->gemm_epilogue) in every
GEMM path (skinny tiles and their Eigen column tail, single-block, row and
column panels, the threaded contraction, k = 0), against stock TF; kernel
policy gemm_epilogue_fusion=False (epilogue as a second pass) gives the same."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import total

# (m, k, n): m = 1, skinny with a column tail (n % 64), empty, k = 0,
# panels (m > 128), the threaded contraction (2 m k n >= 2e7; many blocks
# with ragged edges, and a deep, narrow product that Eigen may shard by depth).
SHAPES = [(1, 96, 200), (5, 96, 70), (64, 33, 128), (0, 96, 200), (7, 0, 130), (3, 96, 0),
          (200, 64, 100), (300, 256, 300), (1001, 96, 777), (130, 4096, 131), (2, 5, 3)]


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _close(got, want):
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("unfused", [False, True])
def test_ffn_bias_gelu_residual_matches_tf(disc, unfused):
    with disc.kernel_policy(gemm_epilogue_fusion=not unfused):
        _ffn_bias_gelu_residual(disc)


def _ffn_bias_gelu_residual(disc):
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 3 +
                 [tf.TensorSpec([None], tf.float32)])
    def f(x, w, r, b):
        return tf.nn.gelu(tf.matmul(x, w) + b, approximate=True) + r

    for i, (m, k, n) in enumerate(SHAPES):
        args = [_rand((m, k), i), _rand((k, n), 20 + i), _rand((m, n), 40 + i), _rand((n,), 60 + i)]
        _close(f(*args).numpy(), f.python_function(*args).numpy())
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    assert total(stats, "compiles") == 1, stats


def test_batched_static_weights_relu(disc):
    """[B, S, K] x [K, N] with constant weights (static N, as in a model):
    B is shared, batch folds into rows; bias and ReLU in the epilogue."""
    w = tf.constant(_rand((48, 100), 1))
    bias = tf.constant(_rand((100,), 2))

    @tf.function(input_signature=[tf.TensorSpec([None, None, 48], tf.float32)])
    def f(x):
        return tf.nn.relu(tf.matmul(x, w) + bias) * 0.5

    for i, (b, s) in enumerate([(1, 1), (1, 37), (3, 9), (0, 4), (2, 130)]):
        x = _rand((b, s, 48), 10 + i)
        _close(f(x).numpy(), f.python_function(x).numpy())
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    assert total(stats, "compiles") == 1, stats


def test_bf16_fast_math_still_runs_the_epilogue(disc):
    """fast_math="bf16": the bf16 kernel runs no epilogue itself; the
    runtime then applies it as a pass (ReLU of -|x| - 1 is 0 only if it ran)."""
    disc.set_options(fast_math="bf16")
    try:
        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
        def f(x, w):
            return tf.nn.relu(-tf.abs(tf.matmul(x, w)) - 1.0) + 2.0

        for i, (m, k, n) in enumerate([(64, 96, 200), (16, 32, 64), (1, 8, 3), (300, 64, 100)]):
            got = f(_rand((m, k), i), _rand((k, n), 5 + i)).numpy()
            np.testing.assert_array_equal(got, np.full((m, n), 2.0, np.float32))
        stats = disc.stats()
        assert total(stats, "fallbacks") == 0, stats
    finally:
        disc.set_options(fast_math="")


# (batch, m, k, n) for the bf16 kernel: one task, column tasks sharing A
# packed once (n > 256, ragged edges), batched with B per entry, a long k
# (several 768-long chunks).
BF16_SHAPES = [(1, 64, 96, 200), (1, 300, 64, 700), (3, 50, 40, 130), (1, 40, 1600, 70)]


@pytest.mark.parametrize("unfused", [False, True])
@pytest.mark.parametrize("weight", [False, True])
def test_bf16_epilogue_covers_every_block(disc, unfused, weight):
    """fast_math="bf16": the epilogue 2 C + bias after the bf16 kernel (also
    under gemm_epilogue_fusion=False) reaches every element (a block it missed
    would hold C) in each of the kernel's task plans, within the bf16 error
    bound (doubled) of the float64 product; B a variable (packed once) or an
    input."""
    disc.set_options(fast_math="bf16", min_cluster_size=1)
    try:
        for i, (nb, m, k, n) in enumerate(BF16_SHAPES):
            x, bias = _rand((nb, m, k), 70 + i), _rand((n,), 80 + i)
            w = _rand((nb, k, n) if nb > 1 else (k, n), 90 + i)
            wv = tf.Variable(w)
            spec = tf.TensorSpec([None] * x.ndim, tf.float32)
            if weight:
                f = tf.function(lambda a: tf.matmul(a, wv) * 2.0 + bias, input_signature=[spec])
                args = [x]
            else:
                f = tf.function(lambda a, b: tf.matmul(a, b) * 2.0 + bias,
                                input_signature=[spec, tf.TensorSpec([None] * w.ndim, tf.float32)])
                args = [x, w]
            with disc.kernel_policy(gemm_epilogue_fusion=not unfused):
                got = f(*args).numpy().astype(np.float64)
            a64, b64 = x.astype(np.float64), w.astype(np.float64)
            want = 2.0 * (a64 @ b64) + bias
            bound = 2.0 * (2.0 ** -7 + 2.0 ** -15 + k * 2.0 ** -23) * (np.abs(a64) @ np.abs(b64))
            err = np.abs(got - want) - 1e-5 * (1.0 + np.abs(want))
            assert np.all(err <= bound), (nb, m, k, n, float(np.max(err / (bound + 1e-30))))
        stats = disc.stats()
        assert total(stats, "fallbacks") == 0, stats
    finally:
        disc.set_options(fast_math="", min_cluster_size=2)
