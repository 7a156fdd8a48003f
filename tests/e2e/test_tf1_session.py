"""TF1: Sessions are clustered through enable() or through the named
DiscOptimizer in custom_optimizers, and agree with stock TF."""
import numpy as np
import tensorflow as tf

from graph_inspection import tf1_executed_ops, total
from shapes import random_f32, shapes_2d


def _build_graph():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, None], name="x")
        y = tf.compat.v1.placeholder(tf.float32, [None, None], name="y")
        a = tf.math.squared_difference(x, y) + tf.math.log1p(tf.abs(y))
        out = tf.identity(tf.where(x > y, a, -a) * tf.math.rsqrt(1.0 + x * x), name="out")
    return graph, x, y, out


def _reference(x, y):
    a = (x - y) ** 2 + np.log1p(np.abs(y))
    return np.where(x > y, a, -a) / np.sqrt(1.0 + x * x)


def _run_shapes(session, x, y, out, count):
    for i, shape in enumerate(shapes_2d(count, seed=3)):
        xv, yv = random_f32(shape, i), random_f32(shape, 1000 + i)
        got = session.run(out, {x: xv, y: yv})
        np.testing.assert_allclose(got, _reference(xv, yv), rtol=2e-5, atol=1e-5)


def test_session_after_enable(disc):
    graph, x, y, out = _build_graph()
    with tf.compat.v1.Session(graph=graph) as session:
        feed = {x: random_f32((3, 4), 0), y: random_f32((3, 4), 1)}
        assert "DiscLaunch" in tf1_executed_ops(session, out, feed)
        _run_shapes(session, x, y, out, 20)
        # Fetching by name still works after rewriting.
        assert session.run("out:0", feed).shape == (3, 4)
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats


def test_session_with_custom_optimizer_only(disc):
    disc.disable()
    graph, x, y, out = _build_graph()
    feed = {x: random_f32((3, 4), 0), y: random_f32((3, 4), 1)}
    with tf.compat.v1.Session(graph=graph) as plain:
        assert "DiscLaunch" not in tf1_executed_ops(plain, out, feed)
    with tf.compat.v1.Session(graph=graph, config=disc.session_config()) as session:
        assert "DiscLaunch" in tf1_executed_ops(session, out, feed)
        _run_shapes(session, x, y, out, 20)
    assert total(disc.stats(), "compiles") == 1


def test_fetching_an_intermediate_and_feeding_one(disc):
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
        mid = tf.exp(x, name="mid") * 3.0
        out = tf.sigmoid(mid - x, name="out")
    with tf.compat.v1.Session(graph=graph) as session:
        xv = random_f32((17,), 0)
        m, o = session.run([mid, out], {x: xv})
        np.testing.assert_allclose(m, np.exp(xv) * 3.0, rtol=1e-5)
        np.testing.assert_allclose(o, 1 / (1 + np.exp(-(m - xv))), rtol=1e-5)
        fed = np.ones(17, np.float32)
        np.testing.assert_allclose(session.run(out, {x: xv, mid: fed}),
                                   1 / (1 + np.exp(-(fed - xv))), rtol=1e-5)
