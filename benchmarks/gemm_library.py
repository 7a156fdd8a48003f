"""The GEMM library decision (issue 21): our runtime GEMM (rt->gemm, this
machine's kernel tier) against oneMKL's sgemm and stock TF's MatMul (oneDNN),
at the fp32 GEMM shapes of the benchmark models, on this CPU.

  ours - benchmarks/gemm_library_driver.cc: RunGemm as the op library runs it
         (blocks on a parallel-for, large dense products on an Eigen pool);
  mkl  - the same driver: oneMKL's cblas_sgemm on its sequential threading
         layer, one call per row panel inside the same parallel-for (how it
         would run on TF's intra-op pool, with no OpenMP/TBB pool of its own),
         loaded with dlopen from the `mkl` wheel (`pip install mkl`);
  tf   - tf.matmul in a tf.function with intra-op threads = --threads.

Times are medians of process CPU time per product divided by the thread
count (the machine is shared: time spent preempted does not count).  The
shapes: BERT-base's projections/FFN at workload B's token counts and workload
C's short requests; ResNet-50's 1x1 convolutions and 3x3 ones as their im2col
GEMMs (pixels x (kh kw cin) x cout) at 128x128 images, batch 2.

    python benchmarks/gemm_library.py [--threads 1] [--reps 15] [--mkl PATH]
    python benchmarks/gemm_library.py --only "T=32,4x4" --no-tf   # shapes named so
"""
import argparse
import glob
import math
import os
import statistics
import sys
import tempfile
import time
from typing import List, Optional, Tuple

import kernel_build
from platform_info import cpu_summary

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SOURCES = ["tf_disc/runtime/cpu/" + s for s in
           ("gemm.cc", "gemm_skinny.cc", "gemm_packed.cc", "gemm_bf16.cc", "gemm_amx.cc",
            "kernel_policy.cc")]

# (name, m, k, n)
SHAPES: List[Tuple[str, int, int, int]] = [
    ("bert proj T=1024", 1024, 768, 768),
    ("bert ffn up T=1024", 1024, 768, 3072),
    ("bert ffn down T=1024", 1024, 3072, 768),
    ("bert proj T=256", 256, 768, 768),
    ("bert ffn up T=256", 256, 768, 3072),
    ("bert proj T=32 (C)", 32, 768, 768),
    ("bert ffn up T=32 (C)", 32, 768, 3072),
    ("bert ffn down T=32 (C)", 32, 3072, 768),
    ("resnet 1x1 32x32 256->64", 2048, 256, 64),
    ("resnet 1x1 32x32 64->256", 2048, 64, 256),
    ("resnet 1x1 16x16 512->128", 512, 512, 128),
    ("resnet 1x1 8x8 1024->256", 128, 1024, 256),
    ("resnet 1x1 4x4 2048->512", 32, 2048, 512),
    ("resnet 3x3 32x32 64", 2048, 576, 64),
    ("resnet 3x3 16x16 128", 512, 1152, 128),
    ("resnet 3x3 8x8 256", 128, 2304, 256),
    ("resnet 3x3 4x4 512", 32, 4608, 512),
]


def find_mkl() -> Optional[str]:
    """libmkl_rt from the `mkl` wheel in this Python's prefix, if installed."""
    for prefix in (sys.prefix, sys.base_prefix):
        found = sorted(glob.glob(os.path.join(prefix, "lib", "libmkl_rt.so*")))
        if found:
            return found[0]
    return None


def tf_ms(m: int, k: int, n: int, reps: int, threads: int) -> float:
    """Median process CPU ms (/ threads) of one tf.matmul of [m,k] x [k,n]."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    chain = max(1, int(2e8 // (2 * m * k * n)))  # ~0.2 GFLOP per timed call
    a = tf.constant(rng.standard_normal((m, k)).astype(np.float32))
    # Distinct weights, so that no product is a common subexpression of another.
    ws = [tf.Variable(rng.standard_normal((k, n)).astype(np.float32)) for _ in range(chain)]

    @tf.function
    def f(x):
        return [tf.matmul(x, w) for w in ws]  # inter-op threads = 1: one at a time

    f(a)
    times = []
    for _ in range(reps):
        t0 = time.process_time()
        f(a)
        times.append((time.process_time() - t0) / threads / chain)
    return statistics.median(times) * 1e3


def geomean(xs: List[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--mkl", default=None, help="libmkl_rt path (default: the mkl wheel's)")
    parser.add_argument("--no-tf", action="store_true")
    parser.add_argument("--only", default="", help="comma list: shapes whose name has one")
    args = parser.parse_args()
    mkl = args.mkl or find_mkl()
    print(cpu_summary())
    missing = "not installed (pip install mkl): column skipped"
    print(f"threads {args.threads}; mkl: {mkl or missing}")
    if not args.no_tf:
        import tensorflow as tf
        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    head = ["shape (m x k x n)", "ours_ms", "ours_GF/s"]
    head += ["mkl_ms", "mkl_GF/s", "ours/mkl", "rel_diff"] if mkl else []
    head += ["tf_ms", "tf_GF/s", "ours/tf"] + (["mkl/tf"] if mkl else []) if not args.no_tf else []
    rows, ratios = [], {"ours/mkl": [], "ours/tf": [], "mkl/tf": []}
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "driver")
        kernel_build.build_driver("gemm_library_driver.cc", SOURCES, exe)
        wanted = [w for w in args.only.split(",") if w]
        for name, m, k, n in SHAPES:
            if wanted and not any(w in name for w in wanted):
                continue
            reps = max(5, min(args.reps * 4, int(args.reps * 2e9 / (2 * m * k * n * 10))))
            run = kernel_build.run_driver
            ours = run(exe, "ours", m, k, n, args.threads, reps)["ms"]
            row = [f"{name} ({m}x{k}x{n})", f"{ours:.3f}", f"{2 * m * k * n / ours / 1e6:.0f}"]
            gf = 2 * m * k * n / 1e6
            if mkl:
                lib = run(exe, "mkl", m, k, n, args.threads, reps, mkl)["ms"]
                diff = run(exe, "check", m, k, n, args.threads, mkl)["rel_diff"]
                ratios["ours/mkl"].append(ours / lib)
                row += [f"{lib:.3f}", f"{gf / lib:.0f}", f"{ours / lib:.2f}x", f"{diff:.1e}"]
            if not args.no_tf:
                t = tf_ms(m, k, n, max(5, args.reps), args.threads)
                ratios["ours/tf"].append(ours / t)
                row += [f"{t:.3f}", f"{gf / t:.0f}", f"{ours / t:.2f}x"]
                if mkl:
                    ratios["mkl/tf"].append(lib / t)
                    row.append(f"{lib / t:.2f}x")
            rows.append(row)
            print("  ".join(row), flush=True)
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    print("\nGEMM time per product (ratios < 1.00x: the left side is faster)")
    for r in [head] + rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    for key, xs in ratios.items():
        if xs:
            print(f"geomean {key}: {geomean(xs):.2f}x over {len(xs)} shapes "
                  f"(best {min(xs):.2f}x, worst {max(xs):.2f}x)")


if __name__ == "__main__":
    main()
