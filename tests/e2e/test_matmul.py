"""GEMM clusters vs stock TF: a dense layer (TF's remapper turns it into
_FusedMatMul, which DiscOptimizer expands back) and an attention block, with
dynamic batch/sequence, one compile per rank signature."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import cluster_stats, tf2_executed_ops, total

D, H, HD = 32, 4, 8


def _close(got, want, rtol=1e-4):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def _weights(seed, *shape):
    return tf.constant(np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 0.2)


def test_dense_layer_fused_matmul_expanded(disc):
    w, b = _weights(0, D, 3 * D), _weights(1, 3 * D)

    @tf.function(input_signature=[tf.TensorSpec([None, D], tf.float32)])
    def f(x):
        return tf.nn.relu(tf.matmul(x, w) + b) * 0.5

    x0 = np.ones((5, D), np.float32)
    ops = tf2_executed_ops(lambda: f(x0))
    assert "DiscLaunch" in ops, sorted(set(ops))
    assert "_FusedMatMul" not in ops and "_MklNativeFusedMatMul" not in ops, sorted(set(ops))
    for i, n in enumerate([5, 1, 0, 17, 64]):
        x = np.random.default_rng(i).standard_normal((n, D)).astype(np.float32)
        _close(f(x).numpy(), f.python_function(x).numpy())
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats


def _attention_block(x, wq, wk, wv):
    q = tf.einsum("bsd,dk->bsk", x, wq)                        # [B,S,D] dense projections
    k = tf.einsum("bsd,dk->bsk", x, wk)
    v = tf.einsum("bsd,dk->bsk", x, wv)
    s = tf.matmul(q, k, transpose_b=True) * (1.0 / HD ** 0.5)  # [B,S,S] BatchMatMulV2
    p = tf.nn.relu(s) + 1e-3
    ctx = tf.matmul(p, v)                                      # [B,S,D]
    return tf.tanh(ctx) + x


def test_attention_block_dynamic_batch_and_seq(disc):
    wq, wk, wv = _weights(2, D, D), _weights(3, D, D), _weights(4, D, D)

    @tf.function(input_signature=[tf.TensorSpec([None, None, D], tf.float32)])
    def f(x):
        return _attention_block(x, wq, wk, wv)

    x0 = np.ones((2, 3, D), np.float32)
    ops = tf2_executed_ops(lambda: f(x0))
    assert "DiscLaunch" in ops, sorted(set(ops))
    for i, (bsz, seq) in enumerate([(2, 3), (1, 1), (4, 17), (0, 5), (3, 0), (8, 64)]):
        x = np.random.default_rng(i).standard_normal((bsz, seq, D)).astype(np.float32)
        _close(f(x).numpy(), f.python_function(x).numpy())
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats


def test_multi_head_scores_einsum(disc):
    @tf.function(input_signature=[tf.TensorSpec([None, None, H, HD], tf.float32)] * 3)
    def f(q, k, v):
        s = tf.einsum("bqhd,bkhd->bhqk", q, k) * 0.25          # [B,H,Q,K]
        p = tf.exp(s - 1.0)
        return tf.einsum("bhqk,bkhd->bhqd", p, v)               # [B,H,Q,HD]

    for i, (bsz, seq) in enumerate([(2, 3), (1, 1), (3, 16), (0, 2)]):
        rng = np.random.default_rng(i)
        q, k, v = (rng.standard_normal((bsz, seq, H, HD)).astype(np.float32) for _ in range(3))
        _close(f(q, k, v).numpy(), f.python_function(q, k, v).numpy())
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    assert all(len(c["keys"]) == 1 for c in cluster_stats(stats)), stats


def test_size_mismatch_raises_invalid_argument(disc):
    f = tf.function(lambda a, b: tf.matmul(a * 2.0, b) + 1.0,
                    input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
    f(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"Matrix size-incompatible: In\[0\]: \[2,3\], In\[1\]: \[4,5\]"):
        f(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))


def test_unsupported_einsum_stays_in_tf(disc):
    """An equation the compiler does not lower is left out of clusters (the
    support table's equation check), so nothing falls back."""
    @tf.function(input_signature=[tf.TensorSpec([None, None, None], tf.float32)] * 2)
    def f(x, y):
        a = tf.exp(x * 0.1) * 2.0
        e = tf.einsum("ijk,ikl->il", a, y)     # j summed within a: stays in TF
        g = tf.einsum("bij,bjk->bki", a, y)    # lowered (operands swapped)
        return tf.tanh(e) + 1.0, g * 0.5 - 1.0

    for i, (p, q, r, s) in enumerate([(2, 3, 4, 5), (1, 1, 1, 1), (3, 0, 2, 2)]):
        rng = np.random.default_rng(i)
        x = rng.standard_normal((p, q, r)).astype(np.float32)
        y = rng.standard_normal((p, r, s)).astype(np.float32)
        for got, want in zip(f(x, y), f.python_function(x, y)):
            _close(got.numpy(), want.numpy())
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    assert total(stats, "compiles") >= 1, stats


def test_tf1_session_dense_layer(disc):
    from graph_inspection import tf1_executed_ops
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, D], name="x")
        w = tf.constant(np.random.default_rng(7).standard_normal((D, 16)).astype(np.float32))
        b = tf.constant(np.random.default_rng(8).standard_normal(16).astype(np.float32))
        out = tf.identity(tf.nn.relu6(tf.matmul(x, w, transpose_b=False) + b) - 1.0, name="out")
    with tf.compat.v1.Session(graph=graph) as session:
        x0 = np.ones((3, D), np.float32)
        assert "DiscLaunch" in tf1_executed_ops(session, out, {x: x0})
        wv, bv = session.run([w, b])
        for i, n in enumerate([3, 1, 0, 40]):
            xv = np.random.default_rng(i).standard_normal((n, D)).astype(np.float32)
            _close(session.run(out, {x: xv}), np.clip(xv @ wv + bv, 0, 6) - 1.0)
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    assert total(stats, "compiles") == 1, stats


def test_bert_style_attention_with_layout_ops(disc):
    """Projections, reshape to heads, transpose, scores, softmax, context,
    merge heads, output projection: one executable for every batch/seq."""
    wq, wk, wv, wo = (_weights(10 + i, D, D) for i in range(4))

    @tf.function(input_signature=[tf.TensorSpec([None, None, D], tf.float32)])
    def f(x):
        b, s = tf.shape(x)[0], tf.shape(x)[1]

        def heads(t):
            return tf.transpose(tf.reshape(t, [b, s, H, HD]), [0, 2, 1, 3])
        q, k, v = heads(tf.matmul(x, wq)), heads(tf.matmul(x, wk)), heads(tf.matmul(x, wv))
        p = tf.nn.softmax(tf.matmul(q, k, transpose_b=True) * (1.0 / HD ** 0.5))
        ctx = tf.reshape(tf.transpose(tf.matmul(p, v), [0, 2, 1, 3]), [b, s, D])
        return tf.matmul(ctx, wo) + x

    for i, (bsz, seq) in enumerate([(2, 3), (1, 1), (3, 17), (0, 4), (2, 0)]):
        x = np.random.default_rng(i).standard_normal((bsz, seq, D)).astype(np.float32)
        _close(f(x).numpy(), f.python_function(x).numpy())
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    assert all(len(c["keys"]) == 1 for c in cluster_stats(stats)), stats
