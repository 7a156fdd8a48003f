"""Shared by examples/resnet50_dynamic.py, examples/mobilenet_v2_dynamic.py
and tests/models/test_cnn_models.py: a Keras CNN (keras.applications,
weights=None, input (None, None, 3)) in a tf.function with dynamic batch and
image size, run by stock TF and by blade_disc_tf, with the share of compute
ops that TF runs inside DiscLaunch (benchmarks/models/coverage.py), the
compiles per cluster and the largest difference from stock TF."""
from __future__ import annotations

import os
import sys
from typing import Callable

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
from models.coverage import Coverage, measure as coverage  # noqa: E402,F401


def resnet_like(blocks: tuple) -> Callable:
    """Bottleneck ResNet (conv-BN-relu, projection shortcuts), built, as a
    factory of tf.functions over [None, None, None, 3]."""
    import keras
    from keras import layers

    def conv_bn(x, filters, k, stride=1, relu=True):
        x = layers.Conv2D(filters, k, stride, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization(epsilon=1.001e-5)(x)
        return layers.ReLU()(x) if relu else x

    inp = keras.Input((None, None, 3))
    x = conv_bn(inp, 64, 7, 2)
    x = layers.MaxPooling2D(3, 2, padding="same")(x)
    for stage, n in enumerate(blocks):
        width = 64 * 2 ** stage
        for i in range(n):
            stride = 2 if i == 0 and stage > 0 else 1
            shortcut = conv_bn(x, 4 * width, 1, stride, relu=False) if i == 0 else x
            y = conv_bn(x, width, 1, stride)
            y = conv_bn(y, width, 3)
            y = conv_bn(y, 4 * width, 1, relu=False)
            x = layers.ReLU()(layers.Add()([shortcut, y]))
    model = keras.Model(inp, layers.GlobalAveragePooling2D()(x))
    model(tf.zeros([1, 32, 32, 3]), training=False)
    return lambda: tf.function(lambda x: model(x, training=False),
                               input_signature=[tf.TensorSpec([None, None, None, 3])])


def build_model(name: str, blocks: tuple = (3, 4, 6, 3)) -> Callable:
    """keras.applications.<name> with random weights (or "resnet50_like":
    resnet_like(blocks)), built (variables created) before tracing, as a
    factory of tf.functions over [None, None, None, 3]."""
    import keras
    if name == "resnet50_like":
        return resnet_like(blocks)
    model = getattr(keras.applications, name)(weights=None, include_top=False, pooling="avg",
                                              input_shape=(None, None, 3))
    model(tf.zeros([1, 32, 32, 3]), training=False)
    return lambda: tf.function(lambda x: model(x, training=False),
                               input_signature=[tf.TensorSpec([None, None, None, 3])])


def shapes(count: int, batches: tuple, sizes: tuple, seed: int = 0) -> list[tuple]:
    """`count` distinct (batch, height, width) with height/width from sizes."""
    rng = np.random.default_rng(seed)
    out: list[tuple] = []
    while len(out) < count:
        s = (int(rng.choice(batches)), int(rng.choice(sizes)), int(rng.choice(sizes)))
        if s not in out:
            out.append(s)
    return out


def run_shapes(stock: Callable, ours: Callable, image_shapes: list[tuple],
               seed: int = 0) -> float:
    """Largest |ours - stock| over the shapes, relative to max |stock| (random
    weights can leave outputs far below 1, e.g. ~1e-11 for MobileNetV2)."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for n, h, w in image_shapes:
        x = tf.constant(rng.uniform(-1, 1, (n, h, w, 3)).astype(np.float32))
        want, got = stock(x).numpy(), ours(x).numpy()
        assert got.shape == want.shape, (got.shape, want.shape)
        worst = max(worst, float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)))
    return worst


def compiles_per_cluster(stats: dict) -> list[int]:
    return [c["compiles"] for c in stats.get("clusters", {}).values()]


def report(name: str, cov: Coverage, stats: dict, max_diff: float, n_shapes: int) -> None:
    counts = compiles_per_cluster(stats)
    fallbacks = sum(c.get("fallbacks", 0) for c in stats.get("clusters", {}).values())
    print(f"{name}: {cov.summary()}")
    print(f"{name}: {len(counts)} clusters, compiles per cluster {sorted(set(counts))} over "
          f"{n_shapes} shapes, fallbacks {fallbacks}; max relative difference from stock TF "
          f"{max_diff:.2e}")
