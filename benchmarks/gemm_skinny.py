"""The skinny GEMM kernel (runtime/cpu/gemm_skinny.cc) at batch-1 BERT's weight
shapes, against the machine's bounds and stock TF's MatMul (oneDNN).

Short products (m = 8..64 rows of activations) stream the weight B from
DRAM: at m = 8 a GEMM does 4 flops per weight byte, so the bound is memory
bandwidth; at m = 64, 32 flops per byte, it is the FMA peak.  This prints,
per shape, the median time, the weight GB/s and the GF/s of:
  ours  - benchmarks/gemm_skinny_driver.cc (RunGemm alone, no TF), built
          here against `--tree`'s runtime sources, B rotated through enough
          copies to exceed L3 (as 4 layers x 28 MB of weights do);
  tf    - tf.matmul on the same number of rotated copies in one tf.function,
          one op at a time (inter-op threads = 1), per product;
plus the read bandwidth of a plain streaming loop on 1 and 2 threads.

    python benchmarks/gemm_skinny.py [--threads 1] [--rows 8,16,32,64] [--check]

Times are process CPU time per product / threads (the machine is shared:
wall time counts other processes' turns); with --threads 1 both sides are
one thread's cycles (TF: intra- and inter-op pools of one thread).
The CPU's model and flags head the output: figures hold for that CPU only.
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time
from typing import List

import kernel_build
from platform_info import cpu_summary

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ["tf_disc/runtime/cpu/" + s for s in
           ("gemm.cc", "gemm_skinny.cc", "gemm_packed.cc", "gemm_bf16.cc", "gemm_amx.cc",
            "kernel_policy.cc")]
# (k, n) of a BERT-base layer's weights: fused QKV, out proj, FFN up, down.
SHAPES = [(768, 2304), (768, 768), (768, 3072), (3072, 768)]


def build(tree: str, out: str) -> None:
    """The driver linked with `tree`'s runtime GEMM sources (with the flags of
    this machine's kernel library, kernel_build.py)."""
    kernel_build.build_driver("gemm_skinny_driver.cc", SOURCES, out, tree)


def tf_ms(m: int, k: int, n: int, reps: int, threads: int) -> float:
    """Median process CPU ms (/ threads) per tf.matmul of [m,k] x one of enough [k,n] weight copies
    to exceed L3."""
    import numpy as np
    import tensorflow as tf

    copies = max(2, (96 << 20) // (k * n * 4) + 1)
    rng = np.random.default_rng(0)
    ws = [tf.Variable(rng.standard_normal((k, n)).astype(np.float32)) for _ in range(copies)]
    a = tf.constant(rng.standard_normal((m, k)).astype(np.float32))

    @tf.function
    def f(x):
        acc = []
        for w in ws:  # chained through x: one product at a time
            y = tf.matmul(x, w)
            acc.append(y)
            x = x + 0.0 * tf.reduce_sum(y[:1, :1])
        return acc

    f(a)
    times = []
    for _ in range(reps):
        t0 = time.process_time()
        f(a)
        times.append((time.process_time() - t0) / copies / threads)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", default=ROOT, help="source tree whose runtime to time")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rows", default="8,16,32,64")
    parser.add_argument("--reps", type=int, default=41)
    parser.add_argument("--no-tf", action="store_true")
    parser.add_argument("--check", action="store_true", help="also run the driver's sweep")
    args = parser.parse_args()
    print(f"CPU: {cpu_summary()}")
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "driver")
        build(args.tree, exe)
        if args.check:
            print(subprocess.run([exe, "check"], capture_output=True, text=True).stdout.strip())
        for t in (1, 2):
            gbs = kernel_build.run_driver(exe, "bw", t, 512)["GB/s"]
            print(f"stream read, {t} thread(s): {gbs:.1f} GB/s")
        if not args.no_tf:
            import tensorflow as tf
            tf.config.threading.set_inter_op_parallelism_threads(1)
            tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        rows: List[List[str]] = []
        for k, n in SHAPES:
            for m in map(int, args.rows.split(",")):
                r = kernel_build.run_driver(exe, "gemm", m, k, n, args.threads, args.reps)
                line = [f"{m}x{k}x{n}", f"{r['ms']:.3f}", f"{r['GB/s']:.1f}", f"{r['GF/s']:.0f}"]
                if not args.no_tf:
                    ms = tf_ms(m, k, n, max(5, args.reps // 4), args.threads)
                    line += [f"{ms:.3f}", f"{k * n * 4 / ms / 1e6:.1f}",
                             f"{2 * m * k * n / ms / 1e6:.0f}", f"{r['ms'] / ms:.2f}"]
                rows.append(line)
                print("  ".join(line), flush=True)
        head = ["m x k x n", "ours ms", "GB/s", "GF/s"]
        if not args.no_tf:
            head += ["tf ms", "GB/s", "GF/s", "ours/tf"]
        print("\n" + " | ".join(head))
        for line in rows:
            print(" | ".join(line))


if __name__ == "__main__":
    main()
