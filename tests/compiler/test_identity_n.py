"""IdentityN lowers to its inputs (TF's dependency optimizer usually removes
it from tf.function graphs first, but TF1 graphs and imported GraphDefs keep
it): mixed dtypes and shapes, and an empty tensor."""
import numpy as np
import tensorflow as tf

from .opwalk import run_against_tf as run


def identity_n(x, i):
    a, b = tf.identity_n([tf.exp(x), i * 2])
    return a + 1.0, b + 1, tf.identity_n([x])[0] * 3.0


SPECS = [tf.TensorSpec([None, None], tf.float32), tf.TensorSpec([None], tf.int32)]


def test_identity_n_mixed_dtypes(compiler):
    """One executable (dims symbolic) for every shape."""
    rng = np.random.default_rng(2)
    for rows, cols in [(2, 3), (1, 0), (5, 1)]:
        x = rng.standard_normal((rows, cols)).astype(np.float32)
        run(compiler, identity_n, SPECS, [x, np.arange(rows, dtype=np.int32)])
