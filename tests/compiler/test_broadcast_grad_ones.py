"""BroadcastGradientArgs' raw values when a run-time dim is 1 at run time
(ops/broadcast_grad.py): TF then reduces that position on both sides (or
returns nothing for equal shapes), which the compiled constant cannot know,
so a cluster that returns the values runs such calls with TF (a fallback,
TF's values); other calls, and gradients that only Sum over the axes, run
compiled."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import cluster_stats, total

F = tf.float32
# (spec of x, spec of y, [(x shape, y shape, falls back)]) per case
CASES = [
    ([None, 3], [1, 3], [((4, 3), (1, 3), False), ((1, 3), (1, 3), True)]),
    ([None], [None, 3], [((3,), (2, 3), False), ((3,), (1, 3), True)]),
    ([None, None], [None], [((2, 5), (5,), False), ((1, 1), (1,), True),
                            ((2, 1), (1,), True), ((3, 4), (4,), False)]),
    ([None, 3], [None, 3], [((1, 3), (1, 3), False), ((5, 3), (5, 3), False)]),
    ([None, 1, None], [None], [((2, 1, 3), (3,), False), ((1, 1, 3), (3,), True)]),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_raw_values_match_tf_when_a_run_time_dim_is_one(disc, case):
    disc.enable(min_cluster_size=1)
    sx, sy, calls = CASES[case]

    @tf.function(input_signature=[tf.TensorSpec(sx, F), tf.TensorSpec(sy, F)])
    def fn(x, y):
        return tf.raw_ops.BroadcastGradientArgs(s0=tf.shape(x), s1=tf.shape(y))
    for x, y, _ in calls:
        want = tf.raw_ops.BroadcastGradientArgs(s0=x, s1=y)
        got = fn(np.zeros(x, np.float32), np.zeros(y, np.float32))
        assert [g.numpy().tolist() for g in got] == [w.numpy().tolist() for w in want], (x, y)
    st = disc.stats()
    assert total(st, "fallbacks") == sum(f for _, _, f in calls), st
    assert [c["compiles"] for c in cluster_stats(st)] == [1], st


def test_gradient_with_a_dim_of_one_stays_compiled(disc):
    """The gradient Sums over the axes inside the cluster: a batch of 1 is
    TF's gradient without a fallback."""
    disc.enable(min_cluster_size=1)

    def step(x, b):
        with tf.GradientTape() as tape:
            tape.watch([x, b])
            loss = tf.reduce_sum(tf.tanh(x + b) * 3.0)
        return tape.gradient(loss, [x, b])
    fn = tf.function(step, input_signature=[tf.TensorSpec([None, 4]), tf.TensorSpec([1, 4])])
    rng = np.random.default_rng(0)
    for n in (3, 1, 2):
        x = tf.constant(rng.standard_normal((n, 4)), F)
        b = tf.constant(rng.standard_normal((1, 4)), F)
        for g, w in zip(fn(x, b), step(x, b)):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
    st = disc.stats()
    assert total(st, "fallbacks") == 0 and total(st, "compiles") >= 1, st
