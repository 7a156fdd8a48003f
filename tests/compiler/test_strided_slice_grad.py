"""StridedSliceGrad (ops/strided_slice.py): the gradient of x[...] as zeros
shaped like x holding dy at the slice, against TF for shrunk dims, new
axes, ellipses, masks and negative bounds over several input shapes (one
compile per slice), and TF's error for a dy of the wrong shape."""
import numpy as np
import pytest
import tensorflow as tf

from .harness import DiscError

F = tf.float32

# (begin, end, strides, masks: begin, end, ellipsis, new_axis, shrink_axis)
SLICES = {
    "last_step": ([0, -1], [0, 0], [1, 1], (1, 1, 0, 0, 2)),        # x[:, -1]
    "range": ([1, 0], [3, 0], [1, 1], (0, 2, 0, 0, 0)),             # x[1:3]
    "new_axis": ([0, 0, 1], [0, 0, 0], [1, 1, 1], (1, 5, 0, 2, 0)),  # x[:, None, 1:]
    "ellipsis": ([0, 0], [0, 1], [1, 1], (0, 0, 1, 0, 2)),          # x[..., 0]
    "negative": ([-2, 0], [0, 0], [1, 1], (0, 3, 0, 0, 0)),         # x[-2:]
}


def _grad(name):
    begin, end, strides, (bm, em, ell, nam, sam) = SLICES[name]

    def fn(x, dy):
        return tf.raw_ops.StridedSliceGrad(
            shape=tf.shape(x), begin=begin, end=end, strides=strides, dy=dy, begin_mask=bm,
            end_mask=em, ellipsis_mask=ell, new_axis_mask=nam, shrink_axis_mask=sam)

    def forward(x):
        return tf.raw_ops.StridedSlice(input=x, begin=begin, end=end, strides=strides,
                                       begin_mask=bm, end_mask=em, ellipsis_mask=ell,
                                       new_axis_mask=nam, shrink_axis_mask=sam)
    return fn, forward


@pytest.mark.parametrize("name", sorted(SLICES))
def test_matches_tf(compiler, name):
    fn, forward = _grad(name)
    rank = len(forward(tf.zeros([4, 5])).shape)
    exe, dt = compiler.executable(fn, [tf.TensorSpec([None, None], F),
                                       tf.TensorSpec([None] * rank, F)])
    rng = np.random.default_rng(len(name))
    for shape in [(4, 5), (3, 1), (6, 2), (2, 7)]:
        x = np.zeros(shape, np.float32)
        dy = rng.standard_normal(forward(x).shape).astype(np.float32)
        got = exe([x, dy], dt)[0]
        np.testing.assert_array_equal(got, fn(tf.constant(x), tf.constant(dy)).numpy())


def test_dy_of_the_wrong_shape_is_an_error(compiler):
    fn, _ = _grad("range")
    exe, dt = compiler.executable(fn, [tf.TensorSpec([None, None], F),
                                       tf.TensorSpec([None, None], F)])
    x, dy = np.zeros((4, 5), np.float32), np.ones((3, 5), np.float32)
    with pytest.raises(DiscError, match="shape of dy was"):
        exe([x, dy], dt)
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape of dy was"):
        fn(tf.constant(x), tf.constant(dy))
