"""The models of benchmarks/cold_start.py --model (issue 23's list): each a
way to build the model once (untimed) as a factory of fresh tf.functions,
and its workload of 6 requests of distinct shapes.

    bert          the examples' 4-layer encoder (bert_dynamic.py), workload B's first 6 shapes
    resnet50      the ResNet-50-like Keras CNN of cnn_dynamic.py, dynamic batch and image size
    mobilenetv3   keras.applications.MobileNetV3Small, dynamic batch and image size
    conv1d_text   Embedding -> Conv1D -> GlobalMaxPool1D -> Dense text classifier
    vit           keras_calls.vit_like: patches, MultiHeadAttention encoder blocks
    lstm          keras_rnn.py's Embedding -> LSTM -> Dense
"""
from __future__ import annotations

import dataclasses
import os
import sys
from typing import Callable, List, Tuple

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
for _path in (os.path.dirname(_HERE), os.path.join(_HERE, "..", "..", "examples")):
    if _path not in sys.path:
        sys.path.insert(0, _path)

Request = Tuple[np.ndarray, ...]
REQUESTS = 6
IMAGE_SHAPES = [(1, 224, 224), (2, 160, 192), (1, 128, 96), (4, 96, 96), (1, 256, 192),
                (2, 64, 128)]
QUICK_IMAGE_SHAPES = [(1, 64, 64), (2, 48, 80), (1, 32, 96), (3, 40, 40), (1, 96, 64),
                      (2, 56, 48)]
TEXT_VOCAB = 5000


@dataclasses.dataclass(frozen=True)
class ColdModel:
    name: str
    # Builds the model (weights created) and returns a factory of fresh
    # tf.functions taking a request's arrays as positional arguments.
    build: Callable[[bool], Callable[[], Callable]]
    requests: Callable[[bool], List[Request]]


def _images(quick: bool) -> List[Request]:
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((n, h, w, 3)).astype(np.float32),)
            for n, h, w in (QUICK_IMAGE_SHAPES if quick else IMAGE_SHAPES)]


def _token_ids(quick: bool) -> List[Request]:
    from keras_rnn import requests

    reqs = requests(REQUESTS, TEXT_VOCAB)
    return [(ids[:, :16],) if quick else (ids,) for ids in reqs]


def _bert(quick: bool) -> Callable[[], Callable]:
    import tensorflow as tf
    from models.transformer import Config, make_weights, signature_ids, transformer

    config = Config(hidden=64, heads=4, ffn=256, layers=1, vocab=1000) if quick else Config()
    weights = make_weights(config)
    return lambda: tf.function(lambda ids, mask: transformer(ids, mask, weights, config),
                               input_signature=signature_ids())


def _bert_requests(quick: bool) -> List[Request]:
    from bert_dynamic import workload
    from models.transformer import Config

    vocab = 1000 if quick else Config().vocab
    out: List[Request] = []
    for ids, mask in workload("B", vocab, quick):
        if all(ids.shape != o[0].shape for o in out):
            out.append((ids, mask))
    return out[:REQUESTS]


def _resnet50(quick: bool) -> Callable[[], Callable]:
    from cnn_dynamic_common import resnet_like

    return resnet_like((1, 1, 1, 1) if quick else (3, 4, 6, 3))


def _mobilenetv3(quick: bool) -> Callable[[], Callable]:
    from models.keras_calls import applications

    return applications("MobileNetV3Small")


def _keras_text(layers_of: Callable) -> Callable[[], Callable]:
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Input((None,), dtype="int32"), *layers_of(keras)])
    model(np.zeros((1, 8), np.int32))
    return lambda: tf.function(lambda x: model(x, training=False),
                               input_signature=[tf.TensorSpec([None, None], tf.int32)])


def _conv1d_text(quick: bool) -> Callable[[], Callable]:
    width = 32 if quick else 128
    return _keras_text(lambda keras: [
        keras.layers.Embedding(TEXT_VOCAB, width // 2),
        keras.layers.Conv1D(width, 5, padding="same", activation="relu"),
        keras.layers.Conv1D(width, 3, padding="same", activation="relu"),
        keras.layers.GlobalMaxPooling1D(),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(2)])


def _vit(quick: bool) -> Callable[[], Callable]:
    from models.keras_calls import vit_like

    return vit_like(blocks=1, dim=32) if quick else vit_like(blocks=4, dim=128)


def _lstm(quick: bool) -> Callable[[], Callable]:
    width = 16 if quick else 64
    return _keras_text(lambda keras: [keras.layers.Embedding(TEXT_VOCAB, width),
                                      keras.layers.LSTM(width), keras.layers.Dense(16)])


MODELS = {m.name: m for m in (
    ColdModel("bert", _bert, _bert_requests),
    ColdModel("resnet50", _resnet50, _images),
    ColdModel("mobilenetv3", _mobilenetv3, _images),
    ColdModel("conv1d_text", _conv1d_text, _token_ids),
    ColdModel("vit", _vit, _images),
    ColdModel("lstm", _lstm, _token_ids),
)}


def calls_to_steady(times: List[float], per_pass: int, slack: float = 1.5) -> int:
    """How many calls ran before the steady state: times are consecutive
    passes over the same per_pass requests; a request's steady time is the
    median of its calls in the last two passes; the answer is the position
    (1-based) of the last call slower than slack x its request's steady time
    (0: none was)."""
    passes = len(times) // per_pass
    if passes < 3:
        raise ValueError("calls_to_steady needs at least 3 passes")
    steady = [float(np.median([times[p * per_pass + i] for p in (passes - 2, passes - 1)]))
              for i in range(per_pass)]
    slow = [j for j, t in enumerate(times) if t > slack * steady[j % per_pass]]
    return slow[-1] + 1 if slow else 0
