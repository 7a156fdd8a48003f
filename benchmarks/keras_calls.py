"""Keras image models with function calls in their graphs (Keras 3 runs each
grouped convolution through a tf.function(jit_compile=True), a _noinline
call TF leaves in the graph): ConvNeXtTiny by default, MobileNetV3Small,
EfficientNetB0 and a MultiHeadAttention encoder on request.  Stock TF and
blade_disc_tf run in this process, each on a fresh tf.function of the same
Keras model, over 6 image shapes (dynamic batch and size).

Per model and mode (run = model:mode): the DiscLaunch clusters and function
calls in the graph TF executed, compiles, calls run in TF while compiling
(async), the cold pass (first pass over the shapes: tracing, Grappler,
compiling; stock TF's XLA compiles each jit_compile call once per shape),
the steady pass (median of --repeats passes, modes interleaved), the ratios
stock TF / mode (above 1: the mode is faster) and the largest difference
from stock TF relative to its largest output.

    python benchmarks/keras_calls.py [--models ConvNeXtTiny,vit_like]
        [--modes tf,ours,ours_async] [--repeats 5] [--quick]
"""
from __future__ import annotations

import argparse
import os
import time
from typing import Callable, Dict, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import modes  # noqa: E402
from models import coverage, keras_calls  # noqa: E402
from platform_info import cpu_summary  # noqa: E402
from timing import interleaved_medians, print_table  # noqa: E402

MODES = ("tf", "ours", "ours_async")
SHAPES = [(1, 224, 224), (2, 160, 192), (1, 128, 96), (4, 96, 96), (1, 256, 192), (2, 64, 128)]
QUICK_SHAPES = [(1, 64, 64), (2, 48, 80), (1, 32, 96), (3, 40, 40), (1, 96, 64), (2, 56, 48)]


def _images(shapes) -> List[tf.Tensor]:
    rng = np.random.default_rng(0)
    return [tf.constant(rng.uniform(-1, 1, (n, h, w, 3)).astype(np.float32))
            for n, h, w in shapes]


def _pass(fn: Callable, images: List[tf.Tensor]) -> List[np.ndarray]:
    return [fn(x).numpy() for x in images]


def _cold(mode: str, make: Callable[[], Callable], images: List[tf.Tensor]) -> dict:
    """A fresh tf.function's first pass in `mode`, with the graph TF ran."""
    ours = mode != "tf"
    modes.configure_disc(ours, async_compile=mode == "ours_async")
    fn = make()
    start = time.perf_counter()
    first = []
    graphs = coverage.executed_graphs(lambda: first.append(fn(images[0]).numpy()))
    outputs = first + _pass(fn, images[1:])
    cold_s = time.perf_counter() - start
    row = {"fn": fn, "outputs": outputs, "cold_s": cold_s}
    row["clusters"], row["calls"] = keras_calls.launches_and_calls(graphs)
    row["compiles"] = modes.disc_compiles() if ours else "-"
    row["fallbacks"] = _fallbacks() if ours else "-"
    if mode == "ours_async":
        row["in_tf"] = modes.disc_fallbacks().get("compiling", 0)
        modes.wait_for_async_compiles()  # untimed: the steady passes time the executables
        row["compiles"] = modes.disc_compiles()
    return row


def _fallbacks() -> int:
    """Calls of clusters that ran in TF for another reason than a compile in
    flight (async mode), since the last mode started."""
    return sum(n for why, n in modes.disc_fallbacks().items() if why != "compiling")


def bench(name: str, run_modes: List[str], shapes, repeats: int) -> List[Dict[str, object]]:
    make = keras_calls.build(name)
    images = _images(shapes)
    rows = {mode: _cold(mode, make, images) for mode in run_modes}
    steady = interleaved_medians({m: (lambda f=r["fn"]: _pass(f, images))
                                  for m, r in rows.items()}, repeats)
    base = rows.get("tf")
    table = []
    for mode, row in rows.items():
        diff = "-"
        if base is not None and mode != "tf":
            diff = max(float(np.abs(g - w).max() / max(np.abs(w).max(), 1e-30))
                       for g, w in zip(row["outputs"], base["outputs"]))
        table.append({
            "run": f"{name}:{mode}", "clusters": row["clusters"], "calls": row["calls"],
            "compiles": row["compiles"], "in_tf_compiling": row.get("in_tf", "-"),
            "cold_s": row["cold_s"], "steady_s": steady[mode],
            "cold_tf/x": modes.ratio(base["cold_s"], row["cold_s"]) if base else "-",
            "steady_tf/x": modes.ratio(steady["tf"], steady[mode]) if base else "-",
            "max_rel_diff": diff, "fallbacks": row["fallbacks"]})
    if run_modes[-1] != "tf" and _fallbacks() != rows[run_modes[-1]]["fallbacks"]:
        print(f"FALLBACKS in the steady passes of {name}: {modes.disc_fallbacks()}")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="ConvNeXtTiny")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true",
                        help="convnext_like at small images (a smoke test)")
    args = parser.parse_args()
    run_modes = [m for m in args.modes.split(",") if m]
    unknown = set(run_modes) - set(MODES)
    if unknown:
        parser.error(f"unknown modes {sorted(unknown)}; choose from {MODES}")
    names = ["convnext_like"] if args.quick else [m for m in args.models.split(",") if m]
    shapes = QUICK_SHAPES if args.quick else SHAPES
    print("CPU:", cpu_summary())
    print("TensorFlow", tf.__version__, "| shapes (batch, height, width):", shapes)
    rows = []
    for name in names:
        rows += bench(name, run_modes, shapes, args.repeats)
    print_table(f"Keras models with function calls, {len(shapes)} shapes (cold = first pass; "
                f"steady = median of {args.repeats} passes, modes interleaved)", rows)


if __name__ == "__main__":
    main()
