"""A graph rewritten once is left alone by a second DiscOptimizer pass: the
Identity kept under a fetched node's name must not become a cluster of its
own each pass (enable() and session_config() both run the optimizer)."""
import numpy as np
import tensorflow as tf

from graph_inspection import tf1_executed_ops
from shapes import random_f32, shapes_2d


def _graph():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, None], name="x")
        y = tf.compat.v1.placeholder(tf.float32, [None, None], name="y")
        out = tf.tanh(x * y + 1.0, name="out")
    return graph, x, y, out


def test_second_pass_keeps_one_launch(disc):
    disc.enable(min_cluster_size=1)
    graph, x, y, out = _graph()
    config = disc.session_config(min_cluster_size=1)
    with tf.compat.v1.Session(graph=graph, config=config) as session:
        feed = {x: random_f32((3, 4), 0), y: random_f32((3, 4), 1)}
        ops = tf1_executed_ops(session, out, feed)
        assert ops.count("DiscLaunch") == 1, ops
        for i, shape in enumerate(shapes_2d(8, seed=5)):
            xv, yv = random_f32(shape, i), random_f32(shape, 100 + i)
            got = session.run("out:0", {x: xv, y: yv})
            np.testing.assert_allclose(got, np.tanh(xv * yv + 1.0), rtol=2e-5, atol=1e-6)
    clusters = disc.stats()["clusters"].values()
    assert sum(c["compiles"] + c["disk_cache_hits"] for c in clusters) == 1
