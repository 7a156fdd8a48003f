"""A BERT-style encoder with dynamic batch and sequence length, written twice
(raw TF ops, and Keras 3 layers: Embedding, MultiHeadAttention,
LayerNormalization, Dense), each in one tf.function run over 20 shapes.

Prints, per variant: the share of compute ops TF ran inside DiscLaunch
clusters (and which ops it left in TF), compiles per cluster (one per
cluster for all 20 shapes) and the largest difference from stock TF.
The models live in benchmarks/models/ (shared with the benchmarks).

    python examples/bert_encoder.py [--layers 2] [--hidden 128] [--shapes 20]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))

from models import harness  # noqa: E402

if __name__ == "__main__":
    harness.example_main(causal=False, doc=__doc__)
