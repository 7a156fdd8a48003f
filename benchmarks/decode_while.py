"""GPT-style greedy decoding inside one tf.while_loop (the sequence grows by
one token per iteration, full recompute without a KV cache): stock TF runs
the loop as Switch/Merge frames op by op, blade_disc_tf compiles the whole
loop into one executable once (decode_loop.py instead loops in Python, one
call per step).  Cold = the first call (tracing and compiling included,
ours synchronous from an empty cache); steady = median of --repeats calls,
the modes interleaved; ratio = stock / ours.

    python benchmarks/decode_while.py [--steps 32] [--layers 2] [--hidden 128]
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import modes  # noqa: E402
from platform_info import cpu_summary  # noqa: E402
from models.transformer import Config, make_weights, next_token_logits  # noqa: E402
from timing import interleaved_medians, print_table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--prompt", type=int, default=8)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--vocab", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    config = Config(hidden=args.hidden, heads=max(1, args.hidden // 64), ffn=4 * args.hidden,
                    layers=args.layers, vocab=args.vocab, causal=True,
                    max_positions=args.prompt + args.steps + 1)
    weights = make_weights(config)

    def decode(prompt, n):
        def body(i, ids):
            nxt = tf.argmax(next_token_logits(ids, weights, config), axis=-1,
                            output_type=tf.int32)
            return i + 1, tf.concat([ids, nxt[:, None]], axis=1)

        return tf.while_loop(lambda i, ids: i < n, body, [0, prompt],
                             shape_invariants=[tf.TensorShape([]),
                                               tf.TensorShape([None, None])])[1]

    spec = [tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([], tf.int32)]
    rng = np.random.default_rng(0)
    prompt = rng.integers(0, config.vocab, (args.batch, args.prompt)).astype(np.int32)
    print(f"CPU: {cpu_summary()}; TF {tf.__version__}")
    fns, rows, want = {}, [], None
    for name, ours in (("tf", False), ("ours", True)):
        modes.configure_disc(ours)
        fn = tf.function(decode, input_signature=spec)
        start = time.perf_counter()
        tokens = fn(prompt, args.steps).numpy()
        cold = time.perf_counter() - start
        want = tokens if want is None else want
        assert np.array_equal(tokens, want), f"{name}: tokens differ from stock TF"
        fns[name] = fn
        rows.append({"mode": name, "cold_s": cold,
                     "compiles": modes.disc_compiles() if ours else 0})
    steady = interleaved_medians({n: (lambda f=f: f(prompt, args.steps).numpy())
                                  for n, f in fns.items()}, args.repeats)
    for row in rows:
        row["steady_ms"] = 1e3 * steady[row["mode"]]
        row["cold_tf/this"] = rows[0]["cold_s"] / row["cold_s"]
        row["steady_tf/this"] = steady["tf"] / steady[row["mode"]]
    print_table(f"Greedy decode in one tf.while_loop: {args.steps} steps from a {args.prompt}-token "
                f"prompt, batch {args.batch}, {args.layers} layers x {args.hidden} hidden, "
                f"vocab {args.vocab}; tokens equal to stock TF's", rows)


if __name__ == "__main__":
    main()
