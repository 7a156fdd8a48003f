"""Split, SplitV, ReverseV2 and MirrorPad compile as strided views of their
input: TF's results for every shape (empty dims included), one compile per
cluster, the ops inside the DiscLaunch, and TF's errors for bad sizes.
(IdentityN: tests/compiler/test_identity_n.py; TF's own Grappler removes it
before our optimizer sees a tf.function.)"""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import total

SPEC3 = [tf.TensorSpec([None, None, None], tf.float32)]


def _run(disc, fn, shapes, ops, dtype=np.float32):
    rng = np.random.default_rng(11)
    for shape in shapes:
        x = (rng.standard_normal(shape) * 10).astype(dtype)
        want = fn.python_function(tf.constant(x))
        got = fn(x)
        for w, g in zip(tf.nest.flatten(want), tf.nest.flatten(got)):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-6)
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    _one_compile_per_cluster_and_ops_inside(disc, fn, stats, ops)


def _one_compile_per_cluster_and_ops_inside(disc, fn, stats, ops):
    # One compile per cluster across all shapes (TF's own Grappler passes may
    # split or drop parts, so the count of clusters is the runtime's).
    assert all(c["compiles"] == 1 for c in stats["clusters"].values()), stats
    left = {n["op"] for n in disc.explain(fn.get_concrete_function()).not_clustered}
    assert not left & set(ops), left


def test_split_and_split_v_along_dynamic_axes(disc):
    @tf.function(input_signature=SPEC3)
    def f(x):
        a, b, c = tf.split(x, 3, axis=1)               # Split, even thirds
        p, q, r = tf.split(x, [1, -1, 2], axis=-1)     # SplitV with an inferred size
        return a * 2.0 + c - b, tf.exp(q) + p + r[..., :1], tf.reduce_sum(q, -1)

    _run(disc, f, [(2, 3, 4), (1, 6, 3), (3, 9, 7), (0, 3, 5), (2, 0, 3), (4, 12, 3)],
         {"Split", "SplitV"})


def test_split_into_column_blocks_of_a_known_width(disc):
    """LSTM gate math on tf.split of [B, 4H] with H known: each block a view
    with row stride 4H, read by the kernel's row loop."""
    @tf.function(input_signature=[tf.TensorSpec([None, 64], tf.float32),
                                  tf.TensorSpec([None, 16], tf.float32)])
    def f(z, c):
        i, g, o, fg = tf.split(z, 4, axis=1)
        c2 = tf.sigmoid(fg) * c + tf.sigmoid(i) * tf.tanh(g)
        return c2, tf.sigmoid(o) * tf.tanh(c2)

    rng = np.random.default_rng(12)
    for rows in (0, 1, 2, 5, 33, 128):
        z = rng.standard_normal((rows, 64)).astype(np.float32)
        c = rng.standard_normal((rows, 16)).astype(np.float32)
        for g, w in zip(f(z, c), f.python_function(tf.constant(z), tf.constant(c))):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    _one_compile_per_cluster_and_ops_inside(disc, f, stats, {"Split"})


def test_reverse_one_and_several_axes(disc):
    @tf.function(input_signature=SPEC3)
    def f(x):
        return tf.reverse(x, [1]) + x, tf.reverse(x, [0, -1]) * 3.0, tf.reverse(x, [])

    _run(disc, f, [(2, 3, 4), (1, 1, 1), (5, 2, 7), (0, 4, 2), (3, 0, 2), (2, 5, 0)],
         {"ReverseV2"})


@pytest.mark.parametrize("mode", ["REFLECT", "SYMMETRIC"])
def test_mirror_pad(disc, mode):
    @tf.function(input_signature=SPEC3)
    def f(x):
        return tf.pad(x, [[0, 0], [2, 1], [1, 3]], mode=mode) * 2.0

    # TF's REFLECT refuses an empty dim even with zero padding there.
    empty = [(0, 5, 6)] if mode == "SYMMETRIC" else []
    _run(disc, f, [(2, 4, 4), (1, 3, 5), (3, 7, 4), (2, 3, 8)] + empty, {"MirrorPad"})
    if mode == "REFLECT":
        with pytest.raises(tf.errors.InvalidArgumentError, match="0, 0 not less than 0"):
            f(np.zeros((0, 5, 6), np.float32))


def test_split_v_int_and_bool(disc):
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32)])
    def f(x):
        a, b = tf.split(x, [2, -1], axis=1)
        return tf.reverse(a, [0]) * 3, tf.split(b > 0, 1, axis=0)[0]

    _run(disc, f, [(3, 5), (1, 2), (4, 9), (0, 3)], {"SplitV", "ReverseV2"}, np.int32)


def test_bad_sizes_are_tfs_errors(disc):
    split = tf.function(lambda x: [t * 2.0 for t in tf.split(x, 2, axis=1)],
                        input_signature=SPEC3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="evenly divide"):
        split(np.zeros((2, 3, 4), np.float32))
    split_v = tf.function(lambda x: [t * 2.0 for t in tf.split(x, [3, -1], axis=2)],
                          input_signature=SPEC3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Determined shape must"):
        split_v(np.zeros((2, 3, 2), np.float32))
    pad = tf.function(lambda x: tf.pad(x, [[0, 0], [0, 0], [2, 0]], mode="REFLECT") * 2.0,
                      input_signature=SPEC3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="less than the dimension size"):
        pad(np.zeros((1, 2, 2), np.float32))
    np.testing.assert_array_equal(pad(np.ones((1, 2, 3), np.float32)).numpy(),
                                  np.full((1, 2, 5), 2.0, np.float32))
