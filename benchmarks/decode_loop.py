"""GPT-style greedy decoding: the sequence grows by one token per step and
every step attends over all previous tokens (full recompute, no KV cache),
so each step has a new shape.  Stock TF runs it op by op, XLA
(jit_compile=True) compiles once per step, blade_disc_tf once per cluster
(ours_async: the steps run in TF until that compile is done).
Total wall time includes all compiling (ours starts from an empty cache);
compile_s is our compiler's own time (the system C++ compiler most of it),
steps_s the steps after the first.  The second table decodes again with the
functions warm, tf and ours interleaved step by step: per-step speed
without compiling.

    python benchmarks/decode_loop.py [--steps 128] [--layers 2] [--hidden 256] [--modes ...]
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
    parser.add_argument("--modes", default="tf,xla,ours,ours_async",
                        help="comma list of tf (always run), xla, ours, ours_async")
    args = parser.parse_args()
    wanted = set(args.modes.split(",")) | {"tf"}
    config = Config(hidden=args.hidden, heads=max(1, args.hidden // 64), ffn=4 * args.hidden,
                    layers=args.layers, vocab=args.vocab, causal=True,
                    max_positions=args.prompt + args.steps)
    weights = make_weights(config)
    prompt = np.random.default_rng(0).integers(0, config.vocab, (args.batch, args.prompt)).astype(np.int32)
    spec = [tf.TensorSpec([None, None], tf.int32)]

    def step(ids):
        return next_token_logits(ids, weights, config)

    modes.configure_disc(False)  # untimed: one-time process start-up costs hit no mode
    tf.function(step, input_signature=spec)(prompt).numpy()
    runs, fns = {}, {}
    for name, ours, kw in (("tf", False, {}), ("xla", False, {"jit_compile": True}),
                           ("ours", True, {}), ("ours_async", True, {})):
        if name not in wanted:
            continue
        modes.configure_disc(ours, async_compile=name == "ours_async")
        fn = tf.function(step, input_signature=spec, **kw)
        start = time.perf_counter()
        tokens, times, logits = decode(fn, prompt, args.steps)
        total = time.perf_counter() - start
        fns[name] = fn
        compile_s = float("nan")
        if ours:
            ran_in_tf = modes.disc_fallbacks().pop("compiling", 0)
            if ran_in_tf:
                print(f"{name}: {ran_in_tf} cluster call(s) ran in TF while compiling")
                modes.wait_for_async_compiles()
            compile_s = sum(c["compile_seconds"] for c in modes.disc_stats_clusters())
        compiles = modes.disc_compiles() if ours else (args.steps if kw else 0)
        runs[name] = (total, times, tokens, logits, compiles, compile_s)
        fallbacks = {k: v for k, v in modes.disc_fallbacks().items() if k != "compiling"} if ours else {}
        if fallbacks:
            print(f"{name}: fallbacks {fallbacks}")
    want_tokens, want_logits = runs["tf"][2], runs["tf"][3]
    tf_total, xla_total = runs["tf"][0], runs["xla"][0] if "xla" in runs else None
    rows = []
    for name, (total, times, tokens, logits, compiles, compile_s) in runs.items():
        same = int(np.sum(tokens[:, args.prompt:] == want_tokens[:, args.prompt:]))
        rows.append({"mode": name, "total_s": total, "compiles": compiles, "compile_s": compile_s,
                     "first_step_s": times[0], "steps_s": sum(times[1:]),
                     "median_step_ms(last 16)": 1e3 * statistics.median(times[-16:]),
                     "tokens_equal_tf": f"{same}/{tokens[:, args.prompt:].size}",
                     "max_logit_diff_step0": float(np.max(np.abs(logits[0] - want_logits[0]))),
                     "total/tf": f"{total / tf_total:.2f}x",
                     "xla_total/total": f"{xla_total / total:.2f}x" if xla_total else "-"})
    print(f"GPT decoder: hidden {config.hidden}, heads {config.heads}, layers {config.layers}, "
          f"vocab {config.vocab}; batch {args.batch}, prompt {args.prompt}, {args.steps} steps "
          f"(seq {args.prompt}..{args.prompt + args.steps - 1}); {os.cpu_count()} CPUs")
    print("xla compiles: one per step (each step has a new sequence length)")
    print_table("Greedy decode, total wall time including compiles", rows)
    if "ours" in fns:
        print_table("Warm decode (compiled), tf and ours interleaved per step",
                    warm_rows(fns["tf"], fns["ours"], prompt, args.steps))


def warm_rows(stock: Callable, ours: Callable, prompt: np.ndarray, steps: int) -> List[dict]:
    """Decodes once more with both functions warm, calling tf then ours on
    the same ids at every step (tf's tokens drive the sequence)."""
    times = {"tf": [], "ours": []}
    ids = prompt
    for _ in range(steps):
        for name, fn in (("tf", stock), ("ours", ours)):
            start = time.perf_counter()
            out = fn(ids).numpy()
            times[name].append(time.perf_counter() - start)
            if name == "tf":
                next_ids = out.argmax(-1).astype(np.int32)[:, None]
        ids = np.concatenate([ids, next_ids], axis=1)
    tf_sum = sum(times["tf"])
    return [{"mode": name, "steps_total_s": sum(t), "median_step_ms": 1e3 * statistics.median(t),
             "median_step_ms(last 16)": 1e3 * statistics.median(t[-16:]),
             "total/tf": f"{sum(t) / tf_sum:.2f}x"} for name, t in times.items()]


if __name__ == "__main__":
    sys.exit(main())
