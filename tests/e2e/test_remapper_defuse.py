"""The oneDNN remapper fuses attention scores `q @ k^T * scale + mask` into
_MklFusedBatchMatMulV2 and x * tanh(softplus(x)) into _MklFusedMish before our
optimizer runs; defuse.cc expands them back so each block stays one cluster
compiled once for every shape."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import total, tf2_executed_ops

HEADS, DEPTH = 4, 16
SPEC = tf.TensorSpec([None, None, HEADS * DEPTH], tf.float32)


@tf.function(input_signature=[SPEC, SPEC, SPEC, tf.TensorSpec([None, 1, 1, None], tf.float32)])
def attention(q, k, v, mask):
    b, s = tf.shape(q)[0], tf.shape(q)[1]

    def heads(t):
        return tf.transpose(tf.reshape(t, [b, s, HEADS, DEPTH]), [0, 2, 1, 3])

    scores = tf.matmul(heads(q), heads(k), transpose_b=True) * (DEPTH ** -0.5) + mask
    out = tf.matmul(tf.nn.softmax(scores, axis=-1), heads(v))
    return tf.reshape(tf.transpose(out, [0, 2, 1, 3]), [b, s, HEADS * DEPTH])


def test_fused_attention_scores_are_expanded_into_one_cluster(disc):
    rng = np.random.default_rng(11)
    shapes = [(2, 5), (1, 7), (3, 9), (2, 16), (4, 3), (1, 1), (2, 33)]
    for i, (batch, seq) in enumerate(shapes):
        args = [rng.standard_normal((batch, seq, HEADS * DEPTH)).astype(np.float32)
                for _ in range(3)]
        args.append((rng.random((batch, 1, 1, seq)) < 0.3).astype(np.float32) * -1e4)
        if i == 0:
            ops = tf2_executed_ops(lambda: attention(*args))
            assert "_MklFusedBatchMatMulV2" not in ops, ops
            assert "DiscLaunch" in ops and "BatchMatMulV2" not in ops, ops
        want = attention.python_function(*map(tf.constant, args)).numpy()
        np.testing.assert_allclose(attention(*args).numpy(), want, rtol=1e-4, atol=1e-5)
    stats = disc.stats()
    assert len(stats["clusters"]) == 1, stats
    assert total(stats, "fallbacks") == 0, stats
    assert total(stats, "compiles") == 1, stats


def test_fused_mish_is_expanded_into_one_cluster(disc):
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def mish(x):
        # fused only as a function output; the second output keeps the graph
        # above Grappler's 4-node minimum
        return x * tf.tanh(tf.nn.softplus(x)), tf.exp(x) * 3.0

    rng = np.random.default_rng(12)
    for i, shape in enumerate([(2, 5), (1, 1), (7, 33), (0, 3), (4, 100), (3, 2)]):
        x = (rng.standard_normal(shape) * 8).astype(np.float32)
        if i == 0:
            ops = tf2_executed_ops(lambda: mish(x))
            assert "_MklFusedMish" not in ops and "DiscLaunch" in ops, ops
        for got, want in zip(mish(x), mish.python_function(tf.constant(x))):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    assert [c["compiles"] for c in stats["clusters"].values()] == [1, 1], stats  # one per output


@pytest.mark.parametrize("approximate", [False, True])
def test_fused_matmul_gelu_is_expanded_into_one_cluster(disc, approximate):
    rng = np.random.default_rng(13)
    w = tf.constant(rng.standard_normal((16, 24)).astype(np.float32) * 0.5)
    bias = tf.constant(rng.standard_normal(24).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, None, 16], tf.float32)])
    def dense_gelu(x):  # Keras Dense(activation="gelu") on a sequence
        y = tf.nn.bias_add(tf.matmul(tf.reshape(x, [-1, 16]), w), bias)
        return tf.reshape(tf.nn.gelu(y, approximate=approximate), tf.concat([tf.shape(x)[:2], [24]], 0))

    for i, shape in enumerate([(2, 5), (1, 1), (3, 17), (0, 4), (4, 33), (2, 2)]):
        x = (rng.standard_normal(shape + (16,)) * 3).astype(np.float32)
        if i == 0:
            ops = tf2_executed_ops(lambda: dense_gelu(x))
            assert "_FusedMatMul" not in ops and "DiscLaunch" in ops, ops
        want = dense_gelu.python_function(tf.constant(x)).numpy()
        np.testing.assert_allclose(dense_gelu(x).numpy(), want, rtol=1e-5, atol=1e-5)
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    assert total(stats, "compiles") == 1, stats
