"""StridedSlice/Slice bounds computed in the cluster from tf.shape (pos_emb[:seq],
x[-n:], x[n - 1]) are host values, not cache-key constants: one compile for
every shape, TF's masks, negative indices, clamping and errors."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import total

POS = np.random.default_rng(5).standard_normal((40, 6)).astype(np.float32)
SHAPES = [(2, 5), (1, 7), (3, 9), (2, 16), (4, 3), (1, 1), (2, 40), (1, 0)]
SPEC = [tf.TensorSpec([None, None, 6], tf.float32)]


def _seq_and_table(x):
    return tf.shape(x)[1], tf.constant(POS)


def _check(disc, fn, shapes=SHAPES):
    rng = np.random.default_rng(7)
    for shape in shapes:
        x = rng.standard_normal(shape + (6,)).astype(np.float32)
        want = fn.python_function(tf.constant(x)).numpy()
        np.testing.assert_allclose(fn(x).numpy(), want, rtol=1e-5, atol=1e-6)
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    assert total(stats, "compiles") == 1, stats


def test_prefix_suffix_and_strided_bounds_from_shapes(disc):
    @tf.function(input_signature=SPEC)
    def f(x):
        seq, p = _seq_and_table(x)
        head = x + p[:seq]                         # end from the shape
        tail = x + p[-seq:][::-1]                  # negative begin, reversed
        odd = tf.reduce_sum(p[seq // 2:seq * 3:2], 0)  # clamped end, stride 2
        back = tf.reduce_sum(p[seq:seq // 3:-1], 0)    # negative stride
        mid = p[1:-seq - 3]                        # end below -n clamps to empty
        return tf.tanh(head) * tail + odd + back + tf.reduce_sum(mid, 0)

    _check(disc, f, [s for s in SHAPES if s[1] > 0])


def test_masks_and_shrink_index_from_shapes(disc):
    @tf.function(input_signature=SPEC)
    def f(x):
        seq, p = _seq_and_table(x)
        last = p[seq - 1]                          # shrink axis, computed index
        from_end = p[-seq]                         # negative shrink index
        block = p[tf.newaxis, seq % 3:, ...]       # new axis + begin + ellipsis
        return x * last + from_end + tf.reduce_sum(block, [0, 1])

    _check(disc, f, [s for s in SHAPES if s[1] > 0])


def test_slice_begin_and_size_from_shapes(disc):
    @tf.function(input_signature=SPEC)
    def f(x):
        seq, p = _seq_and_table(x)
        window = tf.slice(p, [seq // 2, 0], [seq - seq // 2, -1])
        minus_one = seq // (seq + 1) - 1             # -1 computed at run time
        rest = tf.slice(p, tf.stack([seq, 0]), tf.stack([minus_one, 6]))
        return tf.reduce_sum(window, 0) + tf.reduce_sum(rest, 0) + tf.reduce_mean(x, 1)

    _check(disc, f)


def test_out_of_range_shrink_index_is_tf_error(disc):
    @tf.function(input_signature=SPEC)
    def f(x):
        return tf.tanh(x[:, tf.shape(x)[0] + 2]) * 2.0

    f(np.zeros((1, 4, 6), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError):
        f(np.zeros((2, 3, 6), np.float32)).numpy()
    with pytest.raises(tf.errors.InvalidArgumentError):
        f.python_function(tf.zeros((2, 3, 6)))
    assert total(disc.stats(), "compiles") == 1


def test_negative_slice_begin_from_shapes_is_tf_error(disc):
    @tf.function(input_signature=SPEC)
    def f(x):
        seq, p = _seq_and_table(x)
        return tf.reduce_sum(tf.slice(p, tf.stack([seq - 5, 0]), [2, 6]), 0) + tf.tanh(x)

    f(np.zeros((1, 6, 6), np.float32))
    for call in (f, f.python_function):
        with pytest.raises(tf.errors.InvalidArgumentError):
            call(tf.zeros((1, 3, 6))).numpy()


def test_bound_from_a_data_input_is_read_at_run_time(disc):
    @tf.function(input_signature=SPEC + [tf.TensorSpec([2], tf.int32)])
    def f(x, end):
        return tf.tanh(tf.strided_slice(x, [0, 1], end)) * 2.0

    rng = np.random.default_rng(9)
    for end in ([2, 4], [1, -1], [2, 4], [1, -1], [5, 9]):
        x = rng.standard_normal((2, 5, 6)).astype(np.float32)
        np.testing.assert_allclose(f(x, end).numpy(),
                                   f.python_function(tf.constant(x), tf.constant(end)).numpy(),
                                   rtol=1e-6)
    stats = disc.stats()
    assert total(stats, "fallbacks") == 0, stats
    assert total(stats, "compiles") == 1, stats  # end is read at run time, not a key value
