"""Stitch kernels and shape speculation end to end: Keras 3 LayerNormalization,
residual + LayerNorm, masked softmax and a GRU-style gate in tf.functions vs
stock TF over many (batch, sequence) shapes, each cluster compiled once."""
import keras
import numpy as np
import tensorflow as tf

from graph_inspection import cluster_stats, tf2_function_graphs, total

C = 48
SHAPES = [(2, 7), (1, 1), (4, 33), (3, 0), (1, 128), (5, 2), (2, 64), (6, 9)]


def _top_level_ops(call) -> list:
    """Node ops of the optimized graphs that hold DiscLaunch nodes (not
    their libraries, which hold every function this process defined; TF
    may also report graphs other tests instantiated)."""
    graphs = [[n.op for n in fg.post_optimization_graph.node]
              for fg in tf2_function_graphs(call)]
    return [op for g in graphs if "DiscLaunch" in g for op in g]


def _close(got, want, tol=2e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_layernorm_softmax_gate_one_compile_each(disc):
    rng = np.random.default_rng(0)
    ln = keras.layers.LayerNormalization(epsilon=1e-6)
    ln.build((None, None, C))
    ln.gamma.assign(rng.standard_normal(C).astype(np.float32))
    ln.beta.assign(rng.standard_normal(C).astype(np.float32))
    bias = tf.constant(rng.standard_normal(C).astype(np.float32))

    def block(x, r, mask):
        h = ln(x + bias + r)                              # residual + LayerNorm
        scores = tf.einsum("bsc,btc->bst", h, h) * 0.1 + (1.0 - mask[:, None, :]) * -1e4
        p = tf.nn.softmax(scores)                         # masked softmax
        gate = tf.sigmoid(r) * tf.tanh(h + bias)          # GRU-style gate
        return p, gate

    spec = [tf.TensorSpec([None, None, C], tf.float32)] * 2 + \
        [tf.TensorSpec([None, None], tf.float32)]
    f = tf.function(block, input_signature=spec)
    for i, (b, s) in enumerate(SHAPES):
        x = rng.standard_normal((b, s, C)).astype(np.float32) * 2 + 1
        r = rng.standard_normal((b, s, C)).astype(np.float32)
        mask = (rng.random((b, s)) > 0.2).astype(np.float32)
        if i == 0:   # the first call shows what TF ran
            ops = _top_level_ops(lambda: f(x, r, mask))
            assert "DiscLaunch" in ops, sorted(set(ops))
            assert not {"Softmax", "Mean", "Sigmoid", "Rsqrt"} & set(ops), sorted(set(ops))
        for got, want in zip(f(x, r, mask), block(x, r, mask)):
            _close(got.numpy(), want.numpy(), 1e-4)
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    for st in cluster_stats(stats):
        assert st["compiles"] == 1 and st["runs"] >= len(SHAPES), st
