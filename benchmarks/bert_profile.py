"""One mode of bert_dynamic.py's encoder in a loop, for a sampling profiler.

bert_dynamic.py interleaves modes, so a profile of it mixes them; this runs
one (ours, ours with fast_math="bf16", the GEMM floor or stock TF) over a workload's requests until
--seconds pass.  It prints "ready" once compiled and warm, so a profiler
attaches to the steady state only:

    python benchmarks/bert_profile.py --mode ours --workload C > log &
    until grep -q ready log; do sleep 1; done
    perf record -g -p $! -o ours.data -- sleep 15
    perf report -i ours.data --no-children --sort dso,sym -g none
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from bert_dynamic import workload  # noqa: E402
from models.transformer import Config, gemm_floor, make_weights, signature_ids, transformer  # noqa: E402


def build(mode: str, config: Config, requests):
    """(tf.function, its requests) for mode: the floor runs on hidden states
    of each request's shape, as in bert_dynamic.py."""
    import blade_disc_tf as disc

    weights = make_weights(config)
    if mode == "tf":
        disc.disable()
    else:
        disc.enable(fast_math="bf16" if mode == "bf16" else "", self_guard=False)
    if mode != "floor":
        return tf.function(lambda ids, mask: transformer(ids, mask, weights, config),
                           input_signature=signature_ids()), requests
    rng = np.random.default_rng(1)
    hidden = [(rng.standard_normal(ids.shape + (config.hidden,)).astype(np.float32),)
              for ids, _ in requests]
    spec = [tf.TensorSpec([None, None, config.hidden], tf.float32)]
    return tf.function(lambda x: gemm_floor(x, weights, config), input_signature=spec), hidden


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=("ours", "bf16", "floor", "tf"), default="ours")
    parser.add_argument("--workload", choices=("A", "B", "C"), default="C")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    config = Config(layers=args.layers)
    fn, requests = build(args.mode, config, workload(args.workload, config.vocab, quick=False))
    for r in requests:  # compile (ours: one executable) and warm up
        fn(*r)
    if args.mode != "tf":  # compiles run in the background by default: wait, then warm up
        import blade_disc_tf as disc

        disc.wait_for_compiles()
        for r in requests:
            fn(*r)
    print("ready", flush=True)
    start, passes = time.perf_counter(), 0
    while passes == 0 or time.perf_counter() - start < args.seconds:
        for r in requests:
            fn(*r)
        passes += 1
    per_pass = (time.perf_counter() - start) / passes
    print(f"{args.mode}: {per_pass * 1e3:.2f} ms per pass of {len(requests)} requests "
          f"({passes} passes)")


if __name__ == "__main__":
    main()
