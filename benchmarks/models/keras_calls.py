"""Keras image models whose graphs hold function calls TF does not inline,
as factories of tf.functions over [None, None, None, 3] (dynamic batch and
image size), built (variables created) before tracing.

Keras 3 runs every grouped convolution (ConvNeXt's 7x7 depthwise ones are
Conv2D(groups=channels)) through a tf.function(jit_compile=True), which TF
marks _noinline: one StatefulPartitionedCall per block in the graph Grappler
sees.  convnext_like() has that structure at test size; applications() gives
keras.applications models (ConvNeXtTiny, MobileNetV3Small, EfficientNetB0);
vit_like() is a small encoder of keras.layers.MultiHeadAttention blocks."""
from __future__ import annotations

from typing import Callable

import tensorflow as tf

SPEC = [tf.TensorSpec([None, None, None, 3], tf.float32)]


def _factory(model) -> Callable[[], Callable]:
    model(tf.zeros([1, 32, 32, 3]), training=False)
    return lambda: tf.function(lambda x: model(x, training=False), input_signature=SPEC)


def convnext_like(depths: tuple = (2, 1), width: int = 16) -> Callable[[], Callable]:
    """ConvNeXt stages (keras.applications.convnext's block: grouped 7x7
    conv, LayerNorm, Dense-GELU-Dense, layer scale, residual; LayerNorm and
    a 2x2 stride-2 conv between stages) after a 4x4 stride-4 stem."""
    import keras
    from keras import layers

    class LayerScale(layers.Layer):
        def build(self, shape):
            self.gamma = self.add_weight(shape=(shape[-1],), initializer=keras.initializers.Constant(0.5))

        def call(self, x):
            return x * self.gamma

    inp = keras.Input((None, None, 3))
    x = layers.Conv2D(width, 4, strides=4)(inp)
    x = layers.LayerNormalization(epsilon=1e-6)(x)
    for stage, depth in enumerate(depths):
        dim = width * 2 ** stage
        if stage > 0:
            x = layers.LayerNormalization(epsilon=1e-6)(x)
            x = layers.Conv2D(dim, 2, strides=2)(x)
        for _ in range(depth):
            y = layers.Conv2D(dim, 7, padding="same", groups=dim)(x)
            y = layers.LayerNormalization(epsilon=1e-6)(y)
            y = layers.Dense(4 * dim)(y)
            y = layers.Activation("gelu")(y)
            y = layers.Dense(dim)(y)
            x = layers.Add()([x, LayerScale()(y)])
    x = layers.GlobalAveragePooling2D()(x)
    return _factory(keras.Model(inp, layers.LayerNormalization(epsilon=1e-6)(x)))


def vit_like(blocks: int = 2, dim: int = 64, heads: int = 4) -> Callable[[], Callable]:
    """4x4 patches (a stride-4 conv) as tokens, pre-norm encoder blocks of
    MultiHeadAttention and a GELU MLP, mean-pooled."""
    import keras
    from keras import layers

    inp = keras.Input((None, None, 3))
    x = layers.Reshape((-1, dim))(layers.Conv2D(dim, 4, strides=4)(inp))
    for _ in range(blocks):
        y = layers.LayerNormalization(epsilon=1e-6)(x)
        x = layers.Add()([x, layers.MultiHeadAttention(heads, dim // heads)(y, y)])
        y = layers.LayerNormalization(epsilon=1e-6)(x)
        y = layers.Dense(dim)(layers.Dense(2 * dim, activation="gelu")(y))
        x = layers.Add()([x, y])
    x = layers.GlobalAveragePooling1D()(layers.LayerNormalization(epsilon=1e-6)(x))
    return _factory(keras.Model(inp, x))


def applications(name: str) -> Callable[[], Callable]:
    """keras.applications.<name>, random weights, no classifier head."""
    import keras

    return _factory(getattr(keras.applications, name)(
        weights=None, include_top=False, pooling="avg", input_shape=(None, None, 3)))


def build(name: str) -> Callable[[], Callable]:
    if name == "convnext_like":
        return convnext_like()
    if name == "vit_like":
        return vit_like()
    return applications(name)


def launches_and_calls(graphs) -> tuple[int, int]:
    """(DiscLaunch nodes, function calls) in the graphs TF executed
    (coverage.executed_graphs); a call is a PartitionedCall, a
    StatefulPartitionedCall or a node running a library function."""
    launches = calls = 0
    for graph in graphs:
        library = {f.signature.name for f in graph.library.function}
        for node in graph.node:
            launches += node.op == "DiscLaunch"
            calls += node.op in ("PartitionedCall", "StatefulPartitionedCall") or \
                node.op in library
    return launches, calls
