"""The runtime's packed AVX-512 fp32 GEMM (runtime/cpu/gemm_packed.cc: 14 x 32
register tiles, B packed in 384 x 256 blocks, A read in place) against numpy
through a real DiscLaunch: m, n, k swept over 1..70 around the tile edges,
sizes over a k block and a column block, every trans_a/trans_b, batched and
strided operands, an epilogue, and kernel policy packed_gemm="off" (Eigen) agreeing."""
import itertools

import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import total

# (m, n, k): tile tails (14 rows, 32 columns, 16-wide transposes) in 1..70,
# then more than one k block (384) and column block (256).
SMALL = [(m, n, k) for m, n, k in itertools.product([1, 13, 14, 15, 29, 70], [1, 16, 31, 33, 70],
                                                    [1, 15, 17, 64, 70])]
BIG = [(300, 257, 385), (129, 513, 770), (512, 768, 768), (200, 64, 1000)]


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _close(got, want, k):
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-6 * max(k, 16) * scale)


def _matmul(transpose_a, transpose_b):
    """2 op(A) op(B): the scale makes a cluster (and runs as the epilogue)."""
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
    def f(a, b):
        return tf.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b) * 2.0
    return f


@pytest.mark.parametrize("transpose_a,transpose_b",
                         list(itertools.product([False, True], repeat=2)))
def test_packed_matches_numpy(disc, transpose_a, transpose_b):
    f = _matmul(transpose_a, transpose_b)
    # every product on the kernel (by default only transposed B), short ones too
    with disc.kernel_policy(skinny_gemm="off", packed_gemm="on"):
        for i, (m, n, k) in enumerate(SMALL + BIG):
            a, b = _rand((m, k), i), _rand((k, n), 1000 + i)
            got = f(np.ascontiguousarray(a.T) if transpose_a else a,
                    np.ascontiguousarray(b.T) if transpose_b else b).numpy()
            _close(got, 2.0 * (a.astype(np.float64) @ b), k)
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats


def test_packed_batched_strided_and_eigen_agree(disc):
    """Attention scores [B,h,S,64] x [B,S,h,64]-as-[B,h,64,S]^T: B strided
    (ldb = h*64), one GEMM per head; Eigen (packed_gemm="off") agrees."""
    @tf.function(input_signature=[tf.TensorSpec([None, 3, None, 64], tf.float32),
                                  tf.TensorSpec([None, None, 3 * 64], tf.float32)])
    def f(q, k):
        b, s = tf.shape(k)[0], tf.shape(k)[1]
        heads = tf.transpose(tf.reshape(k, [b, s, 3, 64]), [0, 2, 1, 3])
        return tf.matmul(q, heads, transpose_b=True) * 2.0

    for i, (b, s) in enumerate([(1, 5), (2, 150), (3, 33)]):
        q, k = _rand((b, 3, s, 64), i), _rand((b, s, 192), 9 + i)
        want = 2.0 * np.einsum("bhsd,bthd->bhst", q.astype(np.float64), k.reshape(b, s, 3, 64))
        got = f(q, k).numpy()
        _close(got, want, 64)
        with disc.kernel_policy(packed_gemm="off"):
            _close(f(q, k).numpy(), got, 64)


@pytest.mark.parametrize("transpose_b", [False, True])
def test_packed_epilogue_on_every_tile(disc, transpose_b):
    """Bias + GELU on C's row panels inside the GEMM, column tails included."""
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2 +
                 [tf.TensorSpec([None], tf.float32)])
    def f(a, b, bias):
        return tf.nn.gelu(tf.matmul(a, b, transpose_b=transpose_b) + bias, approximate=True)

    with disc.kernel_policy(skinny_gemm="off", packed_gemm="on"):
        for i, (m, n, k) in enumerate([(300, 257, 385), (140, 600, 64), (29, 70, 17)]):
            a, b, bias = _rand((m, k), i), _rand((n, k) if transpose_b else (k, n), 7 + i), \
                _rand((n,), 20 + i)
            _close(f(a, b, bias).numpy(), f.python_function(a, b, bias).numpy(), k)


# (batch shape of A, of B, m, n, k): attention-like products (default
# routes: scores with a transposed B and short k, A read in place; context
# with a narrow row-major B; the next batch entry's operands prefetched):
# odd sizes around the 14 x 32 tile, k = 1, more batch entries than tasks,
# broadcast batch dims (A or B shared by every entry), m over 128, empty.
BATCHED = [((8, 12), (8, 12), 128, 128, 64), ((96,), (96,), 37, 45, 64), ((5,), (5,), 15, 33, 1),
           ((2, 3), (1, 3), 29, 70, 17), ((1, 4), (3, 4), 70, 16, 128), ((7,), (7,), 1, 1, 3),
           ((3,), (3,), 14, 32, 129), ((2, 3), (2, 3), 201, 77, 64), ((3,), (1,), 150, 64, 150),
           ((1,), (4,), 143, 33, 256), ((4,), (4,), 0, 5, 64), ((4,), (4,), 5, 0, 64),
           ((0,), (0,), 5, 5, 64), ((4,), (4,), 5, 7, 0)]


@pytest.mark.parametrize("transpose_b", [False, True])
def test_packed_batched_sweep(disc, transpose_b):
    @tf.function(input_signature=[tf.TensorSpec(None, tf.float32)] * 2)
    def f(a, b):
        return tf.matmul(a, b, transpose_b=transpose_b) * 2.0

    for i, (ba, bb, m, n, k) in enumerate(BATCHED):
        a, b = _rand(ba + (m, k), i), _rand(bb + ((n, k) if transpose_b else (k, n)), 50 + i)
        want = 2.0 * np.matmul(a.astype(np.float64), np.swapaxes(b, -1, -2) if transpose_b else b)
        got = f(a, b).numpy()
        assert got.shape == want.shape, (ba, bb, m, n, k)
        if got.size:
            _close(got, want, k)


def test_packed_a_heads_of_wide_rows(disc):
    """Q heads sliced from [B,S,4*64] rows (lda = 256: the tile's rows would
    share L1 sets, so A is packed, not read in place) against numpy."""
    @tf.function(input_signature=[tf.TensorSpec([None, None, 256], tf.float32),
                                  tf.TensorSpec([None, 4, None, 64], tf.float32)])
    def f(q, k):
        b, s = tf.shape(q)[0], tf.shape(q)[1]
        heads = tf.transpose(tf.reshape(q, [b, s, 4, 64]), [0, 2, 1, 3])
        return tf.matmul(heads, k, transpose_b=True) * 2.0

    for i, (b, s) in enumerate([(2, 45), (1, 128)]):
        q, k = _rand((b, s, 256), i), _rand((b, 4, s, 64), 30 + i)
        want = 2.0 * np.einsum("bshd,bhtd->bhst", q.reshape(b, s, 4, 64).astype(np.float64), k)
        _close(f(q, k).numpy(), want, 64)
