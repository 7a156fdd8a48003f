"""Functional loops compiled whole through DiscLaunch (issue 24): Keras LSTM
and GRU models are one cluster (the While, its TensorLists and the layers
around it) compiled once per rank signature; tf.while_loop with a run-time
trip count and a loop whose carried tensor grows; a loop with a stateful op
stays in TF and explain() names the op."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import tf2_function_graphs, total
from loop_programs import loss_and_grad

SEQ_SHAPES = [(1, 1), (2, 5), (8, 1), (3, 17), (1, 64), (4, 9), (8, 32), (5, 2), (2, 40),
              (7, 3), (1, 128), (6, 11), (3, 1), (8, 8), (2, 23), (1, 2), (4, 50), (5, 7),
              (8, 100), (3, 30)]


def _top_level_ops(call):
    """Op types of the executed top-level graphs (cluster functions' bodies,
    kept for the fallback, are not counted)."""
    return [n.op for g in tf2_function_graphs(call) for n in g.post_optimization_graph.node]


def _keras_model(cell: str):
    """Embedding -> RNN -> Dense; "stacked": a Bidirectional LSTM returning
    sequences (TensorLists written at every step, updated in place) under a
    GRU: three loops in one cluster."""
    import keras
    keras.utils.set_random_seed(7)
    if cell == "stacked":
        rnn = [keras.layers.Bidirectional(keras.layers.LSTM(12, return_sequences=True)),
               keras.layers.GRU(10)]
    else:
        rnn = [{"lstm": keras.layers.LSTM, "gru": keras.layers.GRU}[cell](24)]
    return keras.Sequential([keras.layers.Input((None,), dtype="int32"),
                             keras.layers.Embedding(50, 16), *rnn, keras.layers.Dense(4)])


@pytest.mark.parametrize("cell", ["lstm", "gru", "stacked"])
def test_keras_rnn_is_one_cluster_compiled_once(disc, cell):
    model = _keras_model(cell)
    f = tf.function(lambda x: model(x, training=False),
                    input_signature=[tf.TensorSpec([None, None], tf.int32)])
    rng = np.random.default_rng(0)
    first = rng.integers(0, 50, (2, 5)).astype(np.int32)
    ops = _top_level_ops(lambda: f(first))
    assert ops.count("DiscLaunch") == 1, ops
    for op in ("While", "StatelessWhile", "Enter", "Merge", "Switch", "TensorListReserve"):
        assert op not in ops, ops
    for batch, seq in SEQ_SHAPES:
        x = rng.integers(0, 50, (batch, seq)).astype(np.int32)
        np.testing.assert_allclose(f(x).numpy(), model(x, training=False).numpy(),
                                   rtol=1e-4, atol=1e-5)
    # seq 0: stock TF fails (graph mode: it refuses to stack an output list
    # no step wrote, "Tried to stack list which only contains uninitialized
    # tensors" or, with return_sequences, "...elements of an empty list");
    # so do we
    empty = np.zeros((3, 0), np.int32)
    with pytest.raises(tf.errors.InvalidArgumentError):
        model(empty, training=False)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Tried to stack (list which only contains uninitialized "
                             "tensors|elements of an empty list)"):
        f(empty)
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats
    assert stats["optimizer"]["ops_left_in_tf"].get("While", 0) == 0, stats["optimizer"]


def _counted(x, n):
    def body(i, acc):
        return i + 1, tf.tanh(tf.matmul(acc, acc, transpose_b=True)[:, :1] * 0.5 + acc)

    return tf.while_loop(lambda i, acc: i < n, body, [tf.constant(0), x])[1]


def test_while_loop_with_run_time_trip_count(disc):
    f = tf.function(_counted, input_signature=[tf.TensorSpec([None, None], tf.float32),
                                               tf.TensorSpec([], tf.int32)])
    rng = np.random.default_rng(1)
    assert "DiscLaunch" in _top_level_ops(lambda: f(np.ones((2, 2), np.float32), 3))
    for shape, n in [((2, 3), 0), ((1, 1), 1), ((4, 5), 7), ((3, 2), 20), ((3, 0), 2),
                     ((5, 1), 4)]:
        x = rng.standard_normal(shape).astype(np.float32) * 0.5
        np.testing.assert_allclose(f(x, n).numpy(), _counted(x, n).numpy(), rtol=1e-4,
                                   atol=1e-5)
    assert total(disc.stats(), "compiles") == 1
    assert total(disc.stats(), "fallbacks") == 0


EMBEDDING = np.random.default_rng(5).standard_normal((40, 8)).astype(np.float32)


def _decode(prompt, steps):
    """Greedy decode of a toy model: the token sequence grows per step."""
    emb = tf.constant(EMBEDDING)

    def body(i, tokens):
        h = tf.reduce_mean(tf.gather(emb, tokens), axis=1)
        nxt = tf.argmax(tf.matmul(h, emb, transpose_b=True), axis=-1, output_type=tf.int32)
        return i + 1, tf.concat([tokens, (nxt[:, None] + i % 3) % 40], axis=1)

    return tf.while_loop(lambda i, t: i < steps, body, [0, prompt],
                         shape_invariants=[tf.TensorShape([]), tf.TensorShape([None, None])])[1]


def test_growing_decode_loop(disc):
    f = tf.function(_decode, input_signature=[tf.TensorSpec([None, None], tf.int32),
                                              tf.TensorSpec([], tf.int32)])
    rng = np.random.default_rng(2)
    for batch, seq, steps in [(1, 3, 5), (2, 1, 0), (4, 6, 12), (1, 1, 1), (3, 9, 30)]:
        p = rng.integers(0, 40, (batch, seq)).astype(np.int32)
        np.testing.assert_array_equal(f(p, steps).numpy(), _decode(p, steps).numpy())
    assert total(disc.stats(), "compiles") == 1
    assert total(disc.stats(), "fallbacks") == 0


def test_stateful_body_stays_in_tf_and_is_explained(disc):
    def fn(x, n):
        def body(i, acc):
            return i + 1, acc + tf.random.uniform(tf.shape(acc), seed=1) * 0.0 + 1.0

        return tf.while_loop(lambda i, a: i < n, body, [0, x])[1] * 2.0

    f = tf.function(fn, input_signature=[tf.TensorSpec([None], tf.float32),
                                         tf.TensorSpec([], tf.int32)])
    np.testing.assert_allclose(f(np.zeros(3, np.float32), 4).numpy(), np.full(3, 8.0))
    text = str(disc.explain(f, np.zeros(3, np.float32), 4))
    assert "RandomUniform is stateful" in text, text


def test_data_dependent_element_shape_stays_in_tf_and_is_explained(disc):
    def fn(x, n):
        def body(i, lst):
            # the element shape is the loop counter's value: known only at run time
            shape = tf.stack([i + 1])
            empty = tf.raw_ops.TensorListReserve(element_shape=shape, num_elements=1,
                                                 element_dtype=tf.float32)
            return i + 1, lst + tf.raw_ops.TensorListLength(input_handle=empty)

        return tf.while_loop(lambda i, s: i < n, body, [0, tf.size(x)])[1]

    f = tf.function(fn, input_signature=[tf.TensorSpec([None], tf.float32),
                                         tf.TensorSpec([], tf.int32)])
    assert int(f(np.zeros(3, np.float32), 4)) == 3 + 4  # runs in TF
    text = str(disc.explain(f, np.zeros(3, np.float32), 4))
    assert "TensorListReserve with a data-dependent element shape" in text, text


def test_gradient_of_a_loop_stays_in_tf_and_is_explained(disc):
    """The forward loop appends to while_v2's accumulators every iteration,
    which the executable's dense lists would copy each time: both loops
    stay in TF (the compiler itself compiles them: tests/compiler/
    test_loop_gradients.py), the ops around them compile, and explain
    names the append."""
    specs = [tf.TensorSpec([None, 8], tf.float32), tf.TensorSpec([8, 8], tf.float32),
             tf.TensorSpec([], tf.int32)]
    rng = np.random.default_rng(3)
    cases = [(2, 3), (1, 5), (4, 1), (3, 0), (6, 12)]
    args = [(rng.standard_normal((b, 8)).astype(np.float32),
             (rng.standard_normal((8, 8)) * 0.3).astype(np.float32), np.int32(n))
            for b, n in cases]
    disc.disable()
    stock = tf.function(loss_and_grad, input_signature=specs)
    want = [[t.numpy() for t in stock(*a)] for a in args]
    disc.enable()
    f = tf.function(loss_and_grad, input_signature=specs)
    for a, w in zip(args, want):
        for got, ref in zip(f(*a), w):
            np.testing.assert_allclose(got.numpy(), ref, rtol=1e-4, atol=1e-5)
    assert total(disc.stats(), "fallbacks") == 0, disc.stats()
    text = str(disc.explain(f, *args[0]))
    assert "TensorListPushBack in the body" in text, text


def _scan_with_state(x):
    """A TensorArray written every step (a list output of the loop) and the
    loop's final state returned as is: a float output of a loop that also
    has list outputs, read outside the cluster (by the function's return)."""
    steps = tf.shape(x)[1]
    out = tf.TensorArray(tf.float32, size=steps, element_shape=tf.TensorShape([None, 4]))

    def body(i, h, ta):
        h = tf.tanh(h * 0.5 + x[:, i])
        return i + 1, h, ta.write(i, h * 2.0)

    _, h, out = tf.while_loop(lambda i, h, ta: i < steps, body,
                              [0, tf.zeros_like(x[:, 0]), out])
    return out.stack(), h


def test_loop_state_returned_beside_its_list_output(disc):
    f = tf.function(_scan_with_state, input_signature=[tf.TensorSpec([None, None, 4])])
    rng = np.random.default_rng(8)
    first = rng.standard_normal((2, 3, 4)).astype(np.float32)
    ops = _top_level_ops(lambda: f(first))
    assert ops.count("DiscLaunch") == 1 and "While" not in ops and "StatelessWhile" not in ops, ops
    for shape in [(2, 3, 4), (1, 1, 4), (5, 9, 4), (3, 2, 4)]:
        x = rng.standard_normal(shape).astype(np.float32)
        for got, want in zip(f(x), _scan_with_state(tf.constant(x))):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert total(disc.stats(), "compiles") == 1
    assert total(disc.stats(), "fallbacks") == 0
