"""The small models the serving tests convert: a Keras BERT-style encoder, a
Keras CNN (both exported with `model.export`) and a TF1 SavedModel built
with SavedModelBuilder.  Each builder writes the SavedModel and returns the
input shapes to check it on (many sizes, fixed ranks)."""
from __future__ import annotations

import numpy as np

HIDDEN, HEADS, FFN = 64, 4, 128

BERT_SHAPES = [(1, 5, HIDDEN), (2, 16, HIDDEN), (3, 9, HIDDEN), (1, 33, HIDDEN), (4, 2, HIDDEN)]
CNN_SHAPES = [(1, 8, 8, 3), (2, 13, 11, 3), (1, 20, 7, 3), (3, 5, 5, 3)]
TF1_SHAPES = [(1, 16), (5, 16), (17, 16), (2, 16)]


def _layers(keras):
    """Keras layers from primitive ops.  Keras' Dense on a rank-3 input lowers
    to Tensordot, whose Reshape our compiler cannot size yet (it stays in TF),
    so projections flatten to a 2-D MatMul explicitly."""
    ops = keras.ops
    head = HIDDEN // HEADS

    class Linear(keras.layers.Layer):
        def __init__(self, units, activation=None):
            super().__init__()
            self.units, self.activation = units, keras.activations.get(activation)

        def build(self, input_shape):
            self.w = self.add_weight((input_shape[-1], self.units), initializer="glorot_uniform")
            self.b = self.add_weight((self.units,), initializer="random_normal")

        def call(self, x):
            b, s = ops.shape(x)[0], ops.shape(x)[1]
            y = ops.matmul(ops.reshape(x, (-1, ops.shape(x)[2])), self.w) + self.b
            return ops.reshape(self.activation(y), (b, s, self.units))

    class Attention(keras.layers.Layer):
        def build(self, input_shape):
            self.proj = [Linear(HIDDEN) for _ in range(4)]
            for p in self.proj:
                p.build(input_shape)

        def call(self, x):
            b, s = ops.shape(x)[0], ops.shape(x)[1]

            def split(t):
                return ops.transpose(ops.reshape(t, (b, s, HEADS, head)), (0, 2, 1, 3))

            q, k, v = (split(p(x)) for p in self.proj[:3])
            scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) * (1.0 / head ** 0.5)
            ctx = ops.transpose(ops.matmul(ops.softmax(scores, axis=-1), v), (0, 2, 1, 3))
            return self.proj[3](ops.reshape(ctx, (b, s, HIDDEN)))

    return Linear, Attention


def _encoder_layer(keras, x):
    """Attention + GELU FFN, each with a residual and post-LayerNorm."""
    linear, attention = _layers(keras)
    x = keras.layers.LayerNormalization()(x + attention()(x))
    ffn = linear(HIDDEN)(linear(FFN, activation="gelu")(x))
    return keras.layers.LayerNormalization()(x + ffn)


def save_bert(path: str) -> list:
    import keras

    keras.utils.set_random_seed(1)
    inp = keras.Input((None, HIDDEN), name="x")
    x = inp
    for _ in range(2):
        x = _encoder_layer(keras, x)
    keras.Model(inp, x).export(path, verbose=False)
    return BERT_SHAPES


def save_cnn(path: str) -> list:
    import keras

    keras.utils.set_random_seed(2)
    inp = keras.Input((None, None, 3), name="image")
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inp)
    x = keras.layers.Conv2D(8, 3, padding="same")(x)
    x = keras.layers.Activation("swish")(x * 0.5 + 1.0)
    x = keras.layers.GlobalAveragePooling2D()(x)
    out = keras.layers.Dense(10, activation="softmax")(keras.layers.Dense(16, activation="tanh")(x))
    keras.Model(inp, out).export(path, verbose=False)
    return CNN_SHAPES


def save_tf1(path: str) -> list:
    """Ref variables, two signatures sharing one graph."""
    import tensorflow as tf

    v1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        rng = np.random.default_rng(3)
        x = v1.placeholder(tf.float32, [None, 16], name="x")
        with v1.variable_scope("dense", use_resource=False):
            w = v1.get_variable("w", initializer=rng.standard_normal((16, 16)).astype(np.float32))
            b = v1.get_variable("b", initializer=rng.standard_normal(16).astype(np.float32))
        h = tf.tanh(tf.matmul(x, w) + b) * tf.sigmoid(x * 0.5 - 0.1)
        score = tf.reduce_sum(h * h, axis=1) / (1.0 + tf.reduce_max(tf.abs(h), axis=1))
        probs = tf.nn.softmax(h * 2.0, axis=-1)
        with v1.Session(graph=graph) as sess:
            sess.run(v1.global_variables_initializer())
            builder = v1.saved_model.Builder(path)
            sig = v1.saved_model.predict_signature_def
            builder.add_meta_graph_and_variables(
                sess, [v1.saved_model.tag_constants.SERVING],
                signature_def_map={"serving_default": sig({"x": x}, {"score": score}),
                                   "probs": sig({"x": x}, {"probs": probs, "hidden": h})})
            builder.save()
    return TF1_SHAPES


def _save_with_noinline_call(path: str, inner) -> None:
    import tensorflow as tf

    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
        def serve(self, x):
            return {"y": inner(x * 3.0 - 1.0) * 2.0 + 1.0}

    model = Model()
    tf.saved_model.save(model, path, signatures={"serving_default": model.serve})


def save_partly_static(path: str) -> None:
    """A signature with clusters that cannot be compiled ahead of time: one
    inside a `_noinline` function that stays a call (its Cumprod is not
    compilable), one fed by that function's output (rank unknown until run
    time)."""
    import tensorflow as tf

    @tf.function(experimental_attributes={"_noinline": True})
    def inner(y):
        return tf.math.cumprod(tf.tanh(y * 0.5 + 1.0) * tf.sigmoid(y), axis=1)

    _save_with_noinline_call(path, inner)


def save_compilable_call(path: str) -> None:
    """A signature calling a `_noinline` function whose body is compilable:
    the optimizer inlines it, so the whole signature is one cluster."""
    import tensorflow as tf

    @tf.function(experimental_attributes={"_noinline": True})
    def inner(y):
        return tf.tanh(y * 0.5 + 1.0) * tf.sigmoid(y)

    _save_with_noinline_call(path, inner)
