"""End-to-end: compile real tf.functions once per rank signature and compare
with TF on many shapes (0/1 dims, broadcasting)."""
import numpy as np
import pytest
import tensorflow as tf

from .harness import DiscError

F = tf.float32


def _fn(x, y):
    return tf.nn.relu(x * 2.0 + y), tf.exp(y) - x


def _tf_outputs(fn, inputs):
    outs = fn(*[tf.constant(x) for x in inputs])
    outs = outs if isinstance(outs, (tuple, list)) else [outs]
    return [o.numpy() for o in outs]


SHAPES = [((2, 3), (2, 3)), ((2, 3), (1, 3)), ((2, 1), (1, 3)), ((0, 3), (1, 3)),
          ((1, 1), (4, 5)), ((5, 0), (5, 1)), ((1, 7), (3, 1)), ((3, 4), (3, 4))]


def test_binary_broadcast_shapes(compiler):
    exe, out_dt = compiler.executable(_fn, [tf.TensorSpec([None, None], F)] * 2)
    rng = np.random.default_rng(0)
    for sa, sb in SHAPES:
        xs = [rng.standard_normal(sa).astype(np.float32),
              rng.standard_normal(sb).astype(np.float32)]
        got = exe(xs, out_dt)
        want = _tf_outputs(_fn, xs)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_incompatible_shapes_message(compiler):
    exe, out_dt = compiler.executable(_fn, [tf.TensorSpec([None, None], F)] * 2)
    with pytest.raises(DiscError) as e:
        exe([np.zeros((2, 3), np.float32), np.zeros((4, 3), np.float32)], out_dt)
    assert e.value.code == 3
    assert "Incompatible shapes: [2,3] vs. [4,3]" in e.value.message
    assert "AddV2" in e.value.message
