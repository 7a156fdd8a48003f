"""Keras CNNs under blade_disc_tf with dynamic batch and image size:
MobileNetV2 (keras.applications, weights=None, input (None, None, 3)) and a
ResNet-50-style bottleneck network (one block per stage, SAME padding):
at least 95% of the compute ops TF runs are inside DiscLaunch, one compile
per cluster across the shapes, outputs equal to stock TF within float32
rounding.  Small images keep it fast; examples/ runs 20 shapes.

keras.applications.ResNet50 (VALID 1x1 convolutions) compiles because its
filters' dims, proven by Grappler, are constants: conv output sizes do not
depend on kernel-size symbols and each residual Add sees one dim spelling.
"""
import os
import sys

import pytest
import tensorflow as tf

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from cnn_dynamic_common import (build_model, compiles_per_cluster, coverage,  # noqa: E402
                                run_shapes)

SHAPES = [(2, 40, 56), (1, 33, 33), (3, 64, 48)]


@pytest.mark.parametrize("name,blocks", [("MobileNetV2", ()), ("resnet50_like", (1, 1, 1, 1)),
                                         ("ResNet50", ())])
def test_cnn_model_dynamic_shapes(disc, name, blocks):
    make = build_model(name, blocks)
    disc.disable()
    stock = make()
    stock(tf.zeros([1, 32, 32, 3]))
    disc.enable()
    ours = make()
    cov = coverage(lambda: ours(tf.zeros([1, 32, 32, 3])))
    assert cov.share >= 0.95, cov.summary()
    diff = run_shapes(stock, ours, SHAPES)
    assert diff < 1e-4, diff
    st = disc.stats()
    assert sum(c.get("fallbacks", 0) for c in st["clusters"].values()) == 0, st
    assert compiles_per_cluster(st) and set(compiles_per_cluster(st)) == {1}, st
