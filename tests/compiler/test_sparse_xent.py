"""SparseSoftmaxCrossEntropyWithLogits (ops/sparse_xent.py) against TF
through the ctypes harness: loss and backprop, -inf/large logits, int32 and
int64 labels, float64, empty batches, and TF's label and shape errors."""
import numpy as np
import pytest
import tensorflow as tf

from .harness import DiscError
from .opwalk import run_against_tf as run

rng = np.random.default_rng(17)


def xent(logits, labels):
    loss, back = tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(features=logits * 1.0,
                                                                labels=labels)
    return loss + 0.0, back * 1.0


@pytest.mark.parametrize("b,c", [(4, 3), (1, 1), (7, 10), (0, 5), (3, 130)])
@pytest.mark.parametrize("ldt", [tf.int32, tf.int64])
def test_values(compiler, b, c, ldt):
    logits = (rng.standard_normal((b, c)) * 5).astype(np.float32)
    if b > 1 and c > 1:
        logits[0, 1], logits[1, 0] = -np.inf, 80.0
    labels = rng.integers(0, c, b).astype(ldt.as_numpy_dtype)
    run(compiler, xent, [tf.TensorSpec([None, None]), tf.TensorSpec([None], ldt)],
        [logits, labels])


def test_float64(compiler):
    run(compiler, xent, [tf.TensorSpec([None, 4], tf.float64), tf.TensorSpec([None], tf.int32)],
        [rng.standard_normal((3, 4)), np.asarray([3, 0, 2], np.int32)])


def test_keras_loss_gradient(compiler):
    def fn(x, w, y):
        with tf.GradientTape() as tape:
            tape.watch(w)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, x @ w))
        return loss, tape.gradient(loss, w)
    run(compiler, fn, [tf.TensorSpec([None, 5]), tf.TensorSpec([5, 3]),
                       tf.TensorSpec([None], tf.int32)],
        [rng.standard_normal((6, 5)).astype(np.float32),
         rng.standard_normal((5, 3)).astype(np.float32), np.asarray([0, 2, 1, 1, 0, 2], np.int32)])


@pytest.mark.parametrize("logits,labels,msg", [
    ((3, 3), [0, 5, 1], r"Received a label value of 5 which is outside the valid range of "
                        r"\[0, 3\)\.  Label values: 0 5 1"),
    ((2, 3), [0, -1], r"label value of -1 which is outside the valid range of \[0, 3\)"),
    ((2, 0), [0, 0], r"Must have at least one class, but got logits shape \[2,0\]"),
    ((3, 2), [0, 1], r"must have the same first dimension, got logits shape \[3,2\] and labels "
                     r"shape \[2\]")])
def test_errors(compiler, logits, labels, msg):
    exe, out_dt = compiler.executable(xent, [tf.TensorSpec([None, None]),
                                             tf.TensorSpec([None], tf.int32)])
    x, y = np.ones(logits, np.float32), np.asarray(labels, np.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match=msg):
        xent(tf.constant(x), tf.constant(y))
    with pytest.raises(DiscError, match=msg):
        exe([x, y], out_dt)
