"""Shape/layout ops against TF through the ctypes harness: symbolic dims,
one compile per rank signature, several sizes each."""
import numpy as np
import pytest
import tensorflow as tf

from .harness import DiscError
from .opwalk import run_against_tf as run

F, I = tf.float32, tf.int32
rng = np.random.default_rng(11)


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


S2, S3 = tf.TensorSpec([None, None], F), tf.TensorSpec([None, None, None], F)
SHAPES3 = [(2, 3, 4), (1, 5, 2), (4, 1, 3), (0, 2, 3)]


def shape_reshape(x):
    s = tf.shape(x)
    y = tf.reshape(x, tf.stack([s[0] * 1, -1]))
    z = tf.reshape(x, [-1, s[2]])
    return y + 1.0, z, s, tf.size(x), tf.rank(x)


def test_shape_reshape(compiler):
    for sh in SHAPES3 + [(3, 0, 2)]:
        run(compiler, shape_reshape, [S3], [r(*sh)])


def layout(x):
    t = tf.transpose(x, [2, 0, 1])
    e = tf.expand_dims(x, 1)
    sq = tf.squeeze(tf.expand_dims(x, -1), [-1])
    bt = tf.broadcast_to(x[:, :1, :], tf.shape(x))
    return t * 2.0, e, sq, bt, tf.reverse(x, [1]) if False else x[:, ::-1, :]


def test_layout(compiler):
    for sh in SHAPES3:
        run(compiler, layout, [S3], [r(*sh)])


def slicing(x):
    return (x[1:, :-1], x[..., 0], x[:, tf.newaxis, ::2], x[-1], x[::-2, 1::3],
            tf.slice(x, [0, 1], [-1, 1]))


def test_strided_slice(compiler):
    for sh in [(3, 4), (2, 5), (5, 2), (1, 7)]:
        run(compiler, slicing, [S2], [r(*sh)])


def combine(x, y):
    return (tf.concat([x, y], 1), tf.stack([x, y], 0), tf.stack([x, y], -1),
            tf.unstack(x[:2], 2, 0)[1], tf.tile(x, [2, 3]), tf.pad(x, [[1, 0], [2, 1]]),
            tf.pad(x, [[0, 1], [1, 1]], constant_values=3.0))


def test_concat_pack_tile_pad(compiler):
    for sh in [(3, 4), (2, 1), (2, 0)]:
        run(compiler, combine, [S2, S2], [r(*sh), r(*sh)])


def fill_range(x):
    s = tf.shape(x)
    return tf.fill(s, 2.5), tf.zeros_like(x), tf.ones(tf.stack([s[1], 2])), s[0] * s[1] + 1


def test_fill_range(compiler):
    for sh in [(3, 4), (1, 1), (0, 2)]:
        run(compiler, fill_range, [S2], [r(*sh)])


def gather(p, i):
    return tf.gather(p, i, axis=0), tf.gather(p, i, axis=1), tf.one_hot(i, 4) * 2.0


def test_gather_one_hot(compiler):
    spec = [S2, tf.TensorSpec([None], I)]
    for sh, idx in [((3, 4), [0, 2, 1]), ((5, 3), [2]), ((3, 3), [])]:
        run(compiler, gather, spec, [r(*sh), np.asarray(idx, np.int32)])


def test_gather_out_of_range(compiler):
    exe, out_dt = compiler.executable(gather, [S2, tf.TensorSpec([None], I)])
    with pytest.raises(DiscError, match=r"indices\[3\] = 7 is not in \[0, 5\)"):
        exe([r(5, 5), np.asarray([0, 1, 2, 7], np.int32)], out_dt)


def test_reshape_mismatch(compiler):
    def bad(x):
        return tf.reshape(x, [4, -1])
    exe, out_dt = compiler.executable(bad, [S2])
    with pytest.raises(DiscError, match="Input to reshape"):
        exe([r(3, 3)], out_dt)


def ranges(s, l, d, x):
    sh = tf.shape(x)
    return tf.range(s, l, d), tf.range(sh[0]), tf.range(1, sh[1] * 2, 2)


@pytest.mark.parametrize("dt", [tf.float32, tf.int32, tf.int64])
def test_range(compiler, dt):
    sc = tf.TensorSpec([], dt)
    np_dt = dt.as_numpy_dtype
    for s, l, d, sh in [(0, 5, 1, (2, 3)), (3, 1, -1, (1, 1)), (1, 10, 3, (0, 4)),
                        (5, 5, 2, (3, 1)), (0.5, 3, 0.75, (2, 2))]:
        if dt != tf.float32 and (s, l, d) == (0.5, 3, 0.75):
            continue
        run(compiler, ranges, [sc, sc, sc, S2],
            [np_dt(s), np_dt(l), np_dt(d), r(*sh)])
