"""Keras 3 transformer layers (BERT-style encoder, GPT-style decoder with a
causal mask), and the same models from raw TF ops for reference, on dynamic
batch/sequence requests: stock TF tf.function vs
blade_disc_tf, both in this process on fresh tf.functions of the same Keras
model.  Cold = first pass over the requests (tracing and compiling
included); steady = median over --repeats passes, the two modes
interleaved; ratio = stock / ours.

    python benchmarks/keras_transformer_dynamic.py [--layers 2] [--hidden 256]
        [--requests 12] [--repeats 5]
"""
from __future__ import annotations

import argparse
import os
import time
from typing import Callable, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import modes  # noqa: E402
from models import harness  # noqa: E402
from models.transformer import Config, signature_ids  # noqa: E402
from timing import interleaved_medians, print_table  # noqa: E402


def _pass(fn: Callable, requests: List[tuple]) -> List:
    return [fn(*r).numpy() for r in requests]


def _cold(fn: Callable, requests: List[tuple]) -> tuple[float, List]:
    start = time.perf_counter()
    out = _pass(fn, requests)
    return time.perf_counter() - start, out


def bench(kind: str, index: int, config: Config, requests_n: int, repeats: int) -> dict:
    """One model (index 0: raw TF ops, 1: Keras layers), stock TF then ours,
    each on its own tf.function."""
    variants = harness.decoder_variants(config) if kind == "decoder" else \
        harness.encoder_variants(config)
    variant = variants[index]
    spec = signature_ids()[:1] if kind == "decoder" else signature_ids()
    shapes = harness.shapes(requests_n, max_batch=8, max_seq=128, seed=1)
    requests = [variant.make_inputs(b, s, i) for i, (b, s) in enumerate(shapes)]

    modes.configure_disc(False)
    stock = tf.function(variant.eager, input_signature=spec)
    stock_cold, want = _cold(stock, requests)
    modes.configure_disc(True)
    ours = tf.function(variant.eager, input_signature=spec)
    ours_cold, got = _cold(ours, requests)
    steady = interleaved_medians({"stock": lambda: _pass(stock, requests),
                                  "ours": lambda: _pass(ours, requests)}, repeats)
    return {"model": f"{kind}, {variant.name}", "requests": len(requests),
            "stock cold s": stock_cold, "ours cold s": ours_cold,
            "stock steady s": steady["stock"], "ours steady s": steady["ours"],
            "steady ratio": modes.ratio(steady["stock"], steady["ours"]),
            "compiles": modes.disc_compiles(), "fallbacks": sum(modes.disc_fallbacks().values()),
            "max |diff|": modes.max_diff(got, want)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--requests", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for kind in ("encoder", "decoder"):
        config = Config(hidden=args.hidden, heads=max(1, args.hidden // 64),
                        ffn=4 * args.hidden, layers=args.layers, vocab=1000,
                        max_positions=256, causal=kind == "decoder")
        for index in (1, 0):  # Keras layers, then the same model from raw TF ops
            rows.append(bench(kind, index, config, args.requests, args.repeats))
    print_table(f"Transformers (Keras 3 layers / raw TF ops), {args.layers} layers, hidden {args.hidden}, "
                f"batch 1-8 x seq 1-128 (medians of {args.repeats} passes)", rows)


if __name__ == "__main__":
    main()
