"""A compile failure still gives TF's answer; concurrent callers share one compile."""
import threading

import numpy as np
import tensorflow as tf

from graph_inspection import cluster_stats, tf2_executed_ops, total
from shapes import random_f32


def test_forced_compile_failure_falls_back(disc):
    disc.set_options(cxx="/nonexistent/bin/c++")
    f = tf.function(lambda x, y: tf.nn.softplus(x) * y - y,
                    input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
    x0 = random_f32((2, 2), 0)
    assert "DiscLaunch" in tf2_executed_ops(lambda: f(x0, x0))
    for i, shape in enumerate([(2, 3), (5, 1), (0, 4)]):
        x, y = random_f32(shape, i), random_f32(shape, i + 7)
        np.testing.assert_allclose(f(x, y).numpy(), f.python_function(x, y).numpy(), rtol=1e-6)
    stats = disc.stats()
    assert total(stats, "compiles") == 0, stats
    assert total(stats, "fallbacks") >= 3, stats
    reasons = [r for c in cluster_stats(stats) for r in c["fallback_reasons"]]
    assert any("c++" in r or "compil" in r for r in reasons), reasons


def test_fallback_runs_remapper_fused_ops(disc):
    """Grappler's remapper fuses depthwise conv + BiasAdd + Relu into
    _FusedDepthwiseConv2dNative, whose only working CPU kernel is the one
    oneDNN's layout pass swaps in: the fallback must instantiate the cluster
    function the way tf.function does (it used to fail with "Missing 0-th
    output")."""
    disc.set_options(cxx="/nonexistent/bin/c++")
    rng = np.random.default_rng(0)
    f_dw = tf.constant(rng.standard_normal((3, 3, 16, 1)).astype(np.float32))
    f_conv = tf.constant(rng.standard_normal((3, 3, 16, 8)).astype(np.float32))
    b16 = tf.constant(rng.standard_normal(16).astype(np.float32))
    b8 = tf.constant(rng.standard_normal(8).astype(np.float32))

    def model(x):
        y = tf.nn.relu(tf.nn.bias_add(tf.nn.depthwise_conv2d(x, f_dw, [1, 1, 1, 1], "SAME"), b16))
        return tf.nn.relu6(tf.nn.bias_add(tf.nn.conv2d(y * 2.0, f_conv, 1, "SAME"), b8))
    f = tf.function(model, input_signature=[tf.TensorSpec([None, None, None, 16], tf.float32)])
    for i, shape in enumerate([(2, 8, 8, 16), (1, 5, 7, 16)]):
        x = random_f32(shape, i)
        np.testing.assert_allclose(f(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-5)
    stats = disc.stats()
    assert total(stats, "compiles") == 0 and total(stats, "fallbacks") >= 2, stats


def test_two_threads_different_shapes_one_compile(disc):
    f = tf.function(lambda x: tf.sqrt(tf.abs(x)) + x * x,
                    input_signature=[tf.TensorSpec([None, None], tf.float32)])
    errors = []
    start = threading.Barrier(2)

    def worker(seed):
        try:
            start.wait()
            for i in range(10):
                x = random_f32((seed + i, 3 + 2 * i), seed * 100 + i)
                np.testing.assert_allclose(f(x).numpy(), np.sqrt(np.abs(x)) + x * x, rtol=1e-5)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats
