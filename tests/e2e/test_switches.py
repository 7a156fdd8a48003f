"""The off switches: disable(), and TF's use_plugin_optimizers option."""
import numpy as np
import tensorflow as tf

from graph_inspection import tf2_executed_ops


def _fresh_function():
    return tf.function(lambda x: tf.tanh(x) * x + 1.0,
                       input_signature=[tf.TensorSpec([None], tf.float32)])


def test_disable_stops_clustering(disc):
    x = np.arange(5, dtype=np.float32)
    on = _fresh_function()
    assert "DiscLaunch" in tf2_executed_ops(lambda: on(x))
    disc.disable()
    off = _fresh_function()
    assert "DiscLaunch" not in tf2_executed_ops(lambda: off(x))
    np.testing.assert_allclose(off(x).numpy(), np.tanh(x) * x + 1.0, rtol=1e-6)
    disc.enable()
    again = _fresh_function()
    assert "DiscLaunch" in tf2_executed_ops(lambda: again(x))


def test_use_plugin_optimizers_false(disc):
    x = np.arange(5, dtype=np.float32)
    tf.config.optimizer.set_experimental_options({"use_plugin_optimizers": False})
    try:
        f = _fresh_function()
        assert "DiscLaunch" not in tf2_executed_ops(lambda: f(x))
    finally:
        tf.config.optimizer.set_experimental_options({"use_plugin_optimizers": True})
    g = _fresh_function()
    assert "DiscLaunch" in tf2_executed_ops(lambda: g(x))


def test_min_cluster_size(disc):
    disc.set_options(min_cluster_size=4)
    small = tf.function(lambda x: tf.exp(x) + 1.0, input_signature=[tf.TensorSpec([None], tf.float32)])
    x = np.arange(3, dtype=np.float32)
    try:
        assert "DiscLaunch" not in tf2_executed_ops(lambda: small(x))
    finally:
        disc.set_options(min_cluster_size=2)
