"""Keras MobileNetV2 (random weights, input (None, None, 3)) in a tf.function
under blade_disc_tf, over 20 (batch, image size) shapes: coverage, compiles
per cluster and the largest difference from stock TF, as
examples/resnet50_dynamic.py.

    python examples/mobilenet_v2_dynamic.py [--shapes 20]
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from resnet50_dynamic import main  # noqa: E402

if __name__ == "__main__":
    main("MobileNetV2", tuple(range(64, 225, 16)))
