"""GPT-style greedy decoding: the sequence grows by one token per step and
every step attends over all previous tokens (full recompute, no KV cache),
so each step has a new shape.  Stock TF runs it op by op, XLA
(jit_compile=True) compiles once per step, blade_disc_tf once per cluster.
Total wall time includes all compiling (ours starts from an empty cache).

    python benchmarks/decode_loop.py [--steps 128] [--layers 2] [--hidden 256]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Callable, List, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import modes  # noqa: E402
from models.transformer import Config, make_weights, next_token_logits  # noqa: E402
from timing import print_table  # noqa: E402


def decode(step: Callable, prompt: np.ndarray, steps: int) -> Tuple[np.ndarray, List[float], List[np.ndarray]]:
    """Greedy decoding: (all tokens, seconds per step, logits per step)."""
    ids, times, logits = prompt, [], []
    for _ in range(steps):
        start = time.perf_counter()
        out = step(ids).numpy()
        times.append(time.perf_counter() - start)
        logits.append(out)
        ids = np.concatenate([ids, out.argmax(-1).astype(np.int32)[:, None]], axis=1)
    return ids, times, logits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=128)
    parser.add_argument("--prompt", type=int, default=8)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=2048)
    args = parser.parse_args()
    config = Config(hidden=args.hidden, heads=max(1, args.hidden // 64), ffn=4 * args.hidden,
                    layers=args.layers, vocab=args.vocab, causal=True,
                    max_positions=args.prompt + args.steps)
    weights = make_weights(config)
    prompt = np.random.default_rng(0).integers(0, config.vocab, (args.batch, args.prompt)).astype(np.int32)
    spec = [tf.TensorSpec([None, None], tf.int32)]

    def step(ids):
        return next_token_logits(ids, weights, config)

    runs = {}
    for name, ours, kw in (("tf", False, {}), ("xla", False, {"jit_compile": True}),
                           ("ours", True, {})):
        modes.configure_disc(ours)
        fn = tf.function(step, input_signature=spec, **kw)
        start = time.perf_counter()
        tokens, times, logits = decode(fn, prompt, args.steps)
        total = time.perf_counter() - start
        compiles = modes.disc_compiles() if ours else (args.steps if kw else 0)
        runs[name] = (total, times, tokens, logits, compiles)
        if ours and modes.disc_fallbacks():
            print(f"ours: fallbacks {modes.disc_fallbacks()}")
    want_tokens, want_logits = runs["tf"][2], runs["tf"][3]
    xla_total = runs["xla"][0]
    rows = []
    for name, (total, times, tokens, logits, compiles) in runs.items():
        same = int(np.sum(tokens[:, args.prompt:] == want_tokens[:, args.prompt:]))
        rows.append({"mode": name, "total_s": total, "compiles": compiles,
                     "first_step_s": times[0],
                     "median_step_ms(last 16)": 1e3 * statistics.median(times[-16:]),
                     "tokens_equal_tf": f"{same}/{tokens[:, args.prompt:].size}",
                     "max_logit_diff_step0": float(np.max(np.abs(logits[0] - want_logits[0]))),
                     "xla_total/total": f"{xla_total / total:.2f}x"})
    print(f"GPT decoder: hidden {config.hidden}, heads {config.heads}, layers {config.layers}, "
          f"vocab {config.vocab}; batch {args.batch}, prompt {args.prompt}, {args.steps} steps "
          f"(seq {args.prompt}..{args.prompt + args.steps - 1}); {os.cpu_count()} CPUs")
    print("xla compiles: one per step (each step has a new sequence length)")
    print_table("Greedy decode, total wall time including compiles", rows)


if __name__ == "__main__":
    sys.exit(main())
