"""Transformer models shared by the benchmarks, the examples and
tests/models: raw-TF-op and Keras 3 builders plus a clustering-coverage probe."""
