"""A GradientTape training step (Conv2D + broadcast bias add, global mean,
Dense with a broadcast bias add, squared-error loss) through DiscLaunch
against stock TF: the gradients' BroadcastGradientArgs -> Sum -> Reshape and
Conv2D gradients run inside the cluster, compiled once for every shape, and
BroadcastGradientArgs' values match TF's."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import cluster_stats, tf2_executed_ops, total

from .test_conv_pool import _close, _rand

GRAD_OPS = ("BroadcastGradientArgs", "Conv2DBackpropInput", "Conv2DBackpropFilter", "Sum")


def _step(x, labels, f, cb, w, b):
    with tf.GradientTape() as tape:
        tape.watch([f, cb, w, b])
        h = tf.nn.relu(tf.nn.conv2d(x, f, 2, "SAME") + cb)   # [N,H',W',8] + [8]
        d = tf.reduce_mean(h, axis=[1, 2]) @ w + b             # [N,4] + [4]
        loss = tf.reduce_mean(tf.square(d - labels))
    return [loss] + tape.gradient(loss, [f, cb, w, b])


def test_training_step_compiles_once_and_runs_the_gradients_inside(disc):
    disc.enable(min_cluster_size=1)
    step = tf.function(_step, input_signature=[
        tf.TensorSpec([None, None, None, 3]), tf.TensorSpec([None, 4]),
        tf.TensorSpec([3, 3, 3, 8]), tf.TensorSpec([8]), tf.TensorSpec([8, 4]),
        tf.TensorSpec([4])])
    weights = [_rand((3, 3, 3, 8), 1), _rand((8,), 2), _rand((8, 4), 3), _rand((4,), 4)]
    shapes = [(2, 8, 8), (1, 9, 5), (3, 6, 7), (4, 5, 5), (1, 1, 1), (2, 16, 3)]
    for i, (n, h, wd) in enumerate(shapes):
        x, labels = _rand((n, h, wd, 3), 10 + i), _rand((n, 4), 20 + i)
        if i == 0:
            ops = tf2_executed_ops(lambda: step(x, labels, *weights))
            assert "DiscLaunch" in ops, sorted(set(ops))
            assert not set(GRAD_OPS + ("DynamicStitch",)) & set(ops), sorted(set(ops))
        got = step(x, labels, *weights)
        want = _step(tf.constant(x), tf.constant(labels), *map(tf.constant, weights))
        for g, v in zip(got, want):
            _close(g, v, 1e-4)
    st = disc.stats()
    # tf.reduce_mean's gradient stitches its shape with DynamicStitch, now
    # clustered (ops/dynamic_stitch.py): the whole step is one cluster (it
    # was 5 while DynamicStitch ran in TF), compiled once.
    assert total(st, "fallbacks") == 0, st
    assert len(cluster_stats(st)) == 1, st
    assert all(c["compiles"] == 1 and c["runs"] == len(shapes) + 1
               for c in cluster_stats(st)), st


PAIRS = [([2, 1, 3], [2, 4, 3]), ([1, 64], [64]), ([1, 5], [1, 5]), ([1, 1], [1]), ([], [3]),
         ([0, 3], [3]), ([1, 3], [0, 3]), ([5, 64], [64]), ([3, 1, 5], [1, 4, 1])]


def _spec(shape):
    """Dims of 0 and 1 static, the others dynamic (not 1 at run time: the
    values are then exact, see ops/grads.py)."""
    return tf.TensorSpec([d if d < 2 else None for d in shape])


@pytest.mark.parametrize("sx,sy", PAIRS)
def test_broadcast_gradient_args_values(disc, sx, sy):
    disc.enable(min_cluster_size=1)

    @tf.function(input_signature=[_spec(sx), _spec(sy)])
    def fn(x, y):
        return tf.raw_ops.BroadcastGradientArgs(s0=tf.shape(x), s1=tf.shape(y))
    x, y = np.zeros(sx, np.float32), np.zeros(sy, np.float32)
    assert "BroadcastGradientArgs" not in tf2_executed_ops(lambda: fn(x, y))
    want = tf.raw_ops.BroadcastGradientArgs(s0=sx, s1=sy)
    for g, v in zip(fn(x, y), want):
        assert g.numpy().tolist() == v.numpy().tolist(), (sx, sy, g, v)
    st = disc.stats()
    assert total(st, "fallbacks") == 0 and all(c["compiles"] == 1 for c in cluster_stats(st)), st


def test_broadcasting_a_run_time_dim_runs_with_tensorflow(disc):
    """Two run-time dims are compiled as equal (a check before any output):
    1 against 3 is TF's broadcasting, which this executable refuses, so that
    call runs the original function (a fallback, TF's answer), never an
    error the user's model would not raise."""
    disc.enable(min_cluster_size=1)

    @tf.function(input_signature=[tf.TensorSpec([None, None])] * 2)
    def fn(x, y):
        return tf.raw_ops.BroadcastGradientArgs(s0=tf.shape(x), s1=tf.shape(y))
    assert [v.numpy().tolist() for v in fn(np.zeros((2, 3)), np.zeros((2, 3)))] == [[], []]
    got = [v.numpy().tolist() for v in fn(np.zeros((2, 1)), np.zeros((2, 3)))]
    assert got == [[1], []]
    assert [v.numpy().tolist() for v in fn(np.zeros((4, 5)), np.zeros((4, 5)))] == [[], []]
    st = disc.stats()
    assert total(st, "fallbacks") == 1 and [c["compiles"] for c in cluster_stats(st)] == [1], st
    # The refused call is a fallback, not a cache hit: only the third call hit.
    assert total(st, "runs") == 3 and total(st, "cache_hits") == 1, st


def test_gradient_of_a_run_time_broadcast_matches_tf(disc):
    """The whole gradient of x * y with fully dynamic shapes: equal shapes
    run compiled, a run-time broadcast (1 against n) falls back for that
    call only, and every gradient is TF's."""
    disc.enable(min_cluster_size=1)
    rng = np.random.default_rng(0)

    def step(x, y):
        with tf.GradientTape() as tape:
            tape.watch([x, y])
            loss = tf.reduce_sum(tf.tanh(x * y) * 3.0)
        return tape.gradient(loss, [x, y])
    fn = tf.function(step, input_signature=[tf.TensorSpec([None, None])] * 2)
    shapes = [((3, 4), (3, 4)), ((3, 1), (3, 4)), ((5, 2), (5, 2)), ((2, 6), (1, 6))]
    for sx, sy in shapes:
        x = tf.constant(rng.standard_normal(sx), tf.float32)
        y = tf.constant(rng.standard_normal(sy), tf.float32)
        for g, w in zip(fn(x, y), step(x, y)):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
    st = disc.stats()
    assert total(st, "fallbacks") == 2, st
    assert all(c["compiles"] == 1 for c in cluster_stats(st)), st


def test_shapes_fed_to_the_cluster_are_read_at_run_time(disc):
    """Shape vectors from outside the cluster (value_inputs): one compile
    for every value, TF's answers."""
    disc.enable(min_cluster_size=1)

    @tf.function(input_signature=[tf.TensorSpec([2], tf.int32), tf.TensorSpec([1], tf.int32)])
    def fn(s0, s1):
        return tf.raw_ops.BroadcastGradientArgs(s0=s0, s1=s1)
    for s0, s1 in [([4, 3], [3]), ([7, 5], [5]), ([2, 9], [9])]:
        want = tf.raw_ops.BroadcastGradientArgs(s0=s0, s1=s1)
        got = fn(tf.constant(s0), tf.constant(s1))
        assert [g.numpy().tolist() for g in got] == [v.numpy().tolist() for v in want]
    st = disc.stats()
    assert total(st, "fallbacks") == 0 and total(st, "compiles") == 1, st
