"""A GPT-style decoder (pre-LN, causal attention, next-token logits tied to
the token embedding) with dynamic batch and sequence length, written with
raw TF ops and with Keras 3 layers (MultiHeadAttention with
use_causal_mask), each in one tf.function run over 20 shapes.

Prints the same report as examples/bert_encoder.py: coverage, compiles per
cluster, largest difference from stock TF.

    python examples/gpt_decoder.py [--layers 2] [--hidden 128] [--shapes 20]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))

from models import harness  # noqa: E402

if __name__ == "__main__":
    harness.example_main(causal=True, doc=__doc__)
