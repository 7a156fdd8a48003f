"""Per-call overhead of DiscLaunch versus the same ops in stock TF.

A chain of six elementwise ops on tiny, mid-size and large inputs: at tiny
sizes this measures what a DiscLaunch call costs over TF's own op-by-op
executor; at larger sizes it shows what one fused loop saves.  Stock TF and
blade_disc_tf run the same Python function in one process, interleaved.

One tf.function call costs tens of microseconds in Python and eager dispatch,
which hides a launch's own cost; the second table runs --clusters copies of
the chain in one function, separated by tf.roll (not clusterable), so each
call makes that many DiscLaunch calls against six times as many TF ops.
`rolls` runs the same tf.roll ops alone: (disc - rolls) / clusters is what
one launch costs, (tf - rolls) / clusters what its six TF ops cost.  A 2x2
tf.roll costs tens of microseconds here (its ParallelFor hops onto the
intra-op pool), so the rolls must be measured, not estimated.  `floor` is a
stock tf.function of the same signature returning its input: disc - floor
is what a call costs beyond TF's own per-call floor (dispatch, executor, one
DiscLaunch and its kernel).

    python benchmarks/call_overhead.py [--repeats 30] [--clusters 32] [--threads N]
                                       [--shapes 2x2 64x64 ...]
"""
import argparse
import os
from typing import Callable, Optional

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from timing import interleaved_medians, print_table  # noqa: E402


def chain(x, y):
    a = x * y + 1.0
    return tf.tanh(a) * tf.sigmoid(y) - tf.abs(x) * 0.5


def make_function(fn=chain):
    spec = tf.TensorSpec([None, None], tf.float32)
    return tf.function(fn, input_signature=[spec, spec])


def make_many(clusters: int, body: Optional[Callable] = chain):
    """`clusters` chains, one DiscLaunch each: tf.roll between them is left
    to TF, so no two chains fuse.  body=None: the rolls alone."""
    def many(x, y):
        for _ in range(clusters):
            x = tf.roll(x if body is None else body(x, y), 1, axis=1)
        return x
    spec = tf.TensorSpec([None, None], tf.float32)
    return tf.function(many, input_signature=[spec, spec])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--clusters", type=int, default=32)
    parser.add_argument("--threads", type=int, default=0,
                        help="TF intra-op threads (0: TF's default); ours run on the same pool")
    parser.add_argument("--shapes", nargs="*", default=["2x2", "64x64", "256x1024", "1024x1024"],
                        help="RxC; the multi-cluster table runs the first two")
    args = parser.parse_args()
    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    shapes = [tuple(int(d) for d in s.split("x")) for s in args.shapes]
    rng = np.random.default_rng(0)
    inputs = {s: (rng.standard_normal(s).astype(np.float32), rng.standard_normal(s).astype(np.float32))
              for s in shapes}

    stock, stock_many = make_function(), make_many(args.clusters)
    floor = make_function(lambda x, y: tf.identity(x))
    rolls = make_many(args.clusters, body=None)
    for x, y in inputs.values():      # optimized (and cached) before disc is enabled
        stock(x, y)
        floor(x, y)
        stock_many(x, y)
        rolls(x, y)

    import blade_disc_tf as disc
    disc.enable(self_guard=False)
    ours, ours_many = make_function(), make_many(args.clusters)
    for x, y in inputs.values():
        np.testing.assert_allclose(ours(x, y).numpy(), stock(x, y).numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ours_many(x, y).numpy(), stock_many(x, y).numpy(),
                                   rtol=1e-4, atol=1e-4)

    rows = []
    for shape, (x, y) in inputs.items():
        inner = max(1, int(2e6 // (shape[0] * shape[1] + 2000)))
        inner = min(inner, 200)
        med = interleaved_medians({"tf": lambda: stock(x, y), "floor": lambda: floor(x, y),
                                   "disc": lambda: ours(x, y)}, args.repeats, inner)
        rows.append({"shape": "x".join(map(str, shape)), "stock_tf_us": med["tf"] * 1e6,
                     "floor_us": med["floor"] * 1e6, "disc_us": med["disc"] * 1e6,
                     "disc_minus_tf_us": (med["disc"] - med["tf"]) * 1e6,
                     "disc_minus_floor_us": (med["disc"] - med["floor"]) * 1e6,
                     "speedup": med["tf"] / med["disc"]})
    print_table("per-call median (6 elementwise ops, one cluster)", rows)

    rows = []
    for shape in shapes[:2]:
        x, y = inputs[shape]
        med = interleaved_medians({"tf": lambda: stock_many(x, y), "rolls": lambda: rolls(x, y),
                                   "disc": lambda: ours_many(x, y)}, args.repeats, 20)
        per = {m: (med[m] - med["rolls"]) * 1e6 / args.clusters for m in ("tf", "disc")}
        rows.append({"shape": "x".join(map(str, shape)), "stock_tf_us": med["tf"] * 1e6,
                     "rolls_us": med["rolls"] * 1e6, "disc_us": med["disc"] * 1e6,
                     "per_launch_us": per["disc"], "per_6_tf_ops_us": per["tf"],
                     "per_launch_minus_6_tf_ops_us": per["disc"] - per["tf"],
                     "speedup": med["tf"] / med["disc"]})
    print_table(f"per-call median ({args.clusters} clusters of 6 ops, tf.roll between)", rows)
    stats = disc.stats()["clusters"].values()
    print(f"\n{len(stats)} clusters, totals:",
          {c: sum(v[c] for v in stats) for c in ("compiles", "disk_cache_hits", "cache_hits", "fallbacks")})


if __name__ == "__main__":
    main()
