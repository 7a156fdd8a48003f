"""Q, K and V projections of one x [T, H] (variables [H, H] + bias, as in
BERT) alone: stock TF, ours (the three GEMMs merged into one rt->gemm_multi,
passes/merge_gemm.py) and ours with kernel policy multi_gemm=False (the same executable,
one product at a time), interleaved in one process; per-T medians and
ratios to TF.

    python benchmarks/qkv_merge.py [--hidden 768] [--rows 1,8,16,32,64,128,256] [--repeats 30]
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import modes  # noqa: E402
from timing import interleaved_medians, print_table  # noqa: E402


def qkv_function(hidden: int) -> tf.types.experimental.GenericFunction:
    rng = np.random.default_rng(0)
    ws = [tf.Variable(0.02 * rng.standard_normal((hidden, hidden)).astype(np.float32))
          for _ in range(3)]
    bs = [tf.Variable(0.02 * rng.standard_normal(hidden).astype(np.float32)) for _ in range(3)]

    @tf.function(input_signature=[tf.TensorSpec([None, hidden], tf.float32)])
    def qkv(x):
        h = x * 0.5  # produced in the cluster, as LayerNorm's output is in BERT
        q = (tf.matmul(h, ws[0]) + bs[0]) * 0.125
        return q, tf.matmul(h, ws[1]) + bs[1], tf.matmul(h, ws[2]) + bs[2]
    return qkv


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--rows", default="1,8,16,32,64,128,256")
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--inner", type=int, default=20)
    p.add_argument("--cpu", action="store_true",
                   help="process CPU time per call (all threads, spinning included) "
                        "instead of wall time: less of other processes' load")
    args = p.parse_args()
    import blade_disc_tf as disc

    modes.configure_disc(False)
    tf_fn = qkv_function(args.hidden)
    tf_fn(tf.zeros([1, args.hidden]))  # optimized (stock) before ours is enabled
    modes.configure_disc(True)
    ours = qkv_function(args.hidden)

    no_multi = disc.kernel_policy(multi_gemm=False)(ours)

    rows = []
    for t in [int(r) for r in args.rows.split(",")]:
        x = tf.constant(np.random.default_rng(t).standard_normal((t, args.hidden))
                        .astype(np.float32))
        want = [o.numpy() for o in tf_fn(x)]
        got = [o.numpy() for o in ours(x)]
        err = modes.max_diff(got, want)
        med = interleaved_medians({"tf": lambda: tf_fn(x), "ours": lambda: ours(x),
                                   "no_multi": lambda: no_multi(x)},
                                  args.repeats, args.inner,
                                  time.process_time if args.cpu else time.perf_counter)
        rows.append({"T": t, "tf_us": med["tf"] * 1e6, "ours_us": med["ours"] * 1e6,
                     "no_multi_us": med["no_multi"] * 1e6,
                     "ours/tf": med["ours"] / med["tf"],
                     "no_multi/tf": med["no_multi"] / med["tf"],
                     "ours/no_multi": med["ours"] / med["no_multi"], "max_err": err})
    clock = "CPU" if args.cpu else "wall"
    print_table(f"QKV projections, hidden {args.hidden} ({clock} time, medians of "
                f"{args.repeats} x {args.inner} calls)", rows)
    print(f"compiles: {modes.disc_compiles()}")


if __name__ == "__main__":
    main()
