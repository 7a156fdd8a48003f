"""A ResNet-50-like Keras model (bottleneck blocks 3-4-6-3, widths 64-2048,
batch norm, random weights, input (None, None, 3), SAME padding throughout:
keras.applications.ResNet50's VALID 1x1 convolutions are not yet compiled in
reasonable time, see tests/models/test_cnn_models.py) on a workload of
changing batch and image sizes: stock TF (tf.function), XLA
(jit_compile=True: one compile per shape) and blade_disc_tf (one compile per
cluster), all in this process.  --model MobileNetV2 (or any
keras.applications name) runs that model instead.

Cold = the first pass over the workload on a fresh tf.function (tracing,
optimizing and compiling included; ours compiles in the background, its
calls meanwhile running in TF); steady = median over --repeats passes, the
modes interleaved, ours once its compile has finished.  Ratios are against stock TF.

    python benchmarks/cnn_dynamic.py [--requests 12] [--repeats 3] [--model ResNet50]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from cnn_dynamic_common import build_model, shapes  # noqa: E402
from modes import wait_for_async_compiles  # noqa: E402
from platform_info import cpu_summary  # noqa: E402
from timing import print_table  # noqa: E402


def make_mode(name: str, make):
    """A fresh tf.function for the mode (ours: optimized with disc enabled)."""
    import blade_disc_tf as disc
    if name == "blade_disc_tf":
        disc.enable(cache_dir=tempfile.mkdtemp(prefix="disc_cnn_bench_"), self_guard=False)
        disc.clear_executable_cache()
        disc.reset_stats()
        return make()
    disc.disable()
    if name == "xla":
        fn = make()
        return tf.function(fn.python_function, jit_compile=True,
                           input_signature=fn.input_signature)
    return make()


def one_pass(fn, requests) -> tuple[float, np.ndarray]:
    t0 = time.perf_counter()
    last = None
    for x in requests:
        last = fn(x).numpy()
    return time.perf_counter() - t0, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="resnet50_like")
    parser.add_argument("--blocks", type=int, nargs=4, default=[3, 4, 6, 3],
                        help="bottleneck blocks per stage of resnet50_like")
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 96, 128, 160])
    parser.add_argument("--modes", nargs="+", default=["tf", "xla", "blade_disc_tf"])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    requests = [tf.constant(rng.uniform(-1, 1, (n, h, w, 3)).astype(np.float32))
                for n, h, w in shapes(args.requests, (1, 2, 4), tuple(args.sizes))]
    make = build_model(args.model, tuple(args.blocks))
    fns, cold, outs = {}, {}, {}
    for mode in args.modes:
        fns[mode] = make_mode(mode, make)
        cold[mode], outs[mode] = one_pass(fns[mode], requests)
        if mode == "blade_disc_tf":  # steady passes time the executables, not TF
            wait_for_async_compiles()
    steady = {m: [] for m in args.modes}
    for _ in range(args.repeats):
        for mode in args.modes:
            steady[mode].append(one_pass(fns[mode], requests)[0])
    base = statistics.median(steady["tf"]) if "tf" in steady else None
    rows = []
    for mode in args.modes:
        med = statistics.median(steady[mode])
        diff = float(np.abs(outs[mode] - outs[args.modes[0]]).max())
        rows.append({"mode": mode, "cold_s": cold[mode], "steady_median_s": med,
                     "steady/tf": med / base if base else float("nan"),
                     "cold/tf": cold[mode] / cold["tf"] if "tf" in cold else float("nan"),
                     "max_abs_diff_vs_first": diff})
    print(f"CPU: {cpu_summary()}")
    print_table(f"{args.model}: {len(requests)} requests, batch 1/2/4, sizes {args.sizes}", rows)
    if "blade_disc_tf" in args.modes:
        import blade_disc_tf as disc
        counts = [c["compiles"] for c in disc.stats()["clusters"].values()]
        print(f"blade_disc_tf: {len(counts)} clusters, compiles per cluster {sorted(set(counts))}")


if __name__ == "__main__":
    main()
