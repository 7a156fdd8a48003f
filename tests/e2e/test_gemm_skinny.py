"""The runtime's skinny-GEMM kernel (float, row-major B, m <= 128 rows:
register tiles of 8 rows x 32 columns for m <= 32, else 6 x 64, column
tails to Eigen) against stock TF,
through a real DiscLaunch: row counts around the tile and the threshold,
column tails, transposed and batched A, one compile per function."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import total

# (m, k, n): m across both tiles' row tails, the 32-row tile switch and the
# 128-row threshold, n around the tiles (n below one tile skips the kernel,
# the columns past the last full tile go to Eigen), k across 128-row chunks.
SHAPES = [(1, 3, 64), (5, 64, 70), (6, 17, 128), (7, 300, 130), (13, 64, 200), (128, 96, 192),
          (129, 40, 64), (2, 768, 63), (64, 1, 257), (8, 129, 96), (16, 257, 33), (32, 64, 40),
          (33, 70, 96), (3, 5, 31), (11, 200, 65), (29, 130, 100)]


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _close(got, want):
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("skinny", ["on", "wide_tile"])
def test_skinny_matmul_matches_tf(disc, transpose_a, skinny):
    """wide_tile: the 6 x 64 tile for m <= 32 too (kernel policy skinny_gemm)."""
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
    def f(a, b):
        return tf.tanh(tf.matmul(a, b, transpose_a=transpose_a)) * 2.0

    for i, (m, k, n) in enumerate(SHAPES):
        a = _rand((k, m) if transpose_a else (m, k), i)
        b = _rand((k, n), 50 + i)
        with disc.kernel_policy(skinny_gemm=skinny):
            got = f(a, b).numpy()
        _close(got, f.python_function(a, b).numpy())
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats


def test_skinny_batched_strided_heads(disc):
    """Attention context [B,h,S,S] x [B,S,h,d]-as-[B,h,S,d]: B is strided
    (ldb = h*d) and the batch loop runs over heads."""
    @tf.function(input_signature=[tf.TensorSpec([None, 4, None, None], tf.float32),
                                  tf.TensorSpec([None, None, 4 * 64], tf.float32)])
    def f(p, v):
        b, s = tf.shape(v)[0], tf.shape(v)[1]
        heads = tf.transpose(tf.reshape(v, [b, s, 4, 64]), [0, 2, 1, 3])
        return tf.nn.relu(tf.matmul(tf.nn.softmax(p), heads))

    for i, (b, s) in enumerate([(1, 5), (2, 64), (3, 7), (1, 130)]):
        _close(f(_rand((b, 4, s, s), i), _rand((b, s, 256), 9 + i)).numpy(),
               f.python_function(_rand((b, 4, s, s), i), _rand((b, s, 256), 9 + i)).numpy())
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats
