"""tf.shape -> reshape -> transpose -> reduce_sum/softmax with dynamic dims:
the shape arithmetic runs on the host inside the executable, so 20 shapes
share one compile."""
import numpy as np
import tensorflow as tf

from graph_inspection import tf2_executed_ops, total

H = 4


def test_shape_reshape_transpose_reduce_softmax(disc):
    @tf.function(input_signature=[tf.TensorSpec([None, None, None], tf.float32)])
    def f(x):
        s = tf.shape(x)
        b, n = s[0], s[1]
        y = tf.reshape(x * 0.5, tf.stack([b, n, H, -1]))        # [B,S,H,D/H]
        t = tf.transpose(y, [0, 2, 1, 3])                        # [B,H,S,D/H]
        scores = tf.reduce_sum(t * t, axis=-1, keepdims=True)    # [B,H,S,1]
        p = tf.nn.softmax(tf.reshape(scores, tf.stack([b, H, n])))
        return p, tf.reduce_mean(t, axis=[1, 3]) + 1.0

    x0 = np.ones((2, 3, 8), np.float32)
    ops = tf2_executed_ops(lambda: f(x0))
    assert "DiscLaunch" in ops, sorted(set(ops))
    rng = np.random.default_rng(0)
    for i in range(20):
        shape = (int(rng.integers(1, 5)), int(rng.integers(1, 40)), H * int(rng.integers(1, 9)))
        x = rng.standard_normal(shape).astype(np.float32)
        got = f(x)
        want = f.python_function(tf.constant(x))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-5)
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats
