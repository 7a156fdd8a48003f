"""Cold start, every sample in a fresh process: stock TF, XLA
(jit_compile=True), ONNX Runtime (bert only, when tf2onnx and onnxruntime
are installed) and blade_disc_tf with sync and async compile, and with the
product defaults (ours_default: async compile and the self-guard on), for
the models of models/cold_start_models.py (the examples' BERT encoder and
ResNet-50, Keras MobileNetV3Small, a Conv1D text model, a ViT-style encoder
and an LSTM), each over 6 requests of distinct shapes.

Cold = a new tf.function's first pass over the requests: tracing, Grappler,
compiling (ours with an empty compile cache, XLA once per shape; ONNX
Runtime's export and session included) and every request.  Three more passes
follow (untimed as a whole) to find when the steady state was reached:
`to_steady` is the position of the last call slower than 1.5x its request's
steady time (0: the first call already ran at steady speed).  Each sample
is its own spawned process, whose TF runtime is warmed up first by one
small op (the process start is nobody's cold start); the rounds rotate the
order of the modes, and each model's table shows each mode's median and the
ratios of the medians, with ours' compiles, the seconds they took (the
compile log's, sync or in the background) and the calls run in TF meanwhile.

    python benchmarks/cold_start.py [--model bert,resnet50,...|all] [--rounds 3]
        [--modes tf,xla,ours,ours_async,ours_default] [--quick]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time
from typing import Dict, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from timing import print_table  # noqa: E402

MODES = ("tf", "xla", "onnxruntime", "ours", "ours_async", "ours_default")
PASSES = 4  # the cold pass and three to find the steady state


def _compile_seconds(clusters: List[dict]) -> float:
    return sum(e["seconds"] for c in clusters for e in c["compile_log"] if e["compiled"])


def _sample(conn, mode: str, model_name: str, quick: bool) -> None:
    """Child body: PASSES passes of `mode` over the model's requests; sends
    {"cold_s", "first_s", "to_steady", "compiles", "compile_s", "calls_in_tf"}
    or {"skip": why}."""
    import numpy as np
    import tensorflow as tf

    import modes
    from models.cold_start_models import MODELS, calls_to_steady

    model = MODELS[model_name]
    requests = model.requests(quick)
    make = model.build(quick)
    tf.matmul(tf.ones([8, 8]), tf.ones([8, 8])).numpy()  # TF's runtime and pools up
    ours = mode.startswith("ours")
    if ours:  # the other modes never import blade_disc_tf
        modes.configure_disc(True, mode in ("ours_async", "ours_default"))
        if mode == "ours_default":
            import blade_disc_tf as disc

            disc.set_options(self_guard=True)
    start = time.perf_counter()
    if mode == "onnxruntime":
        if model_name != "bert":
            conn.send({"skip": "onnxruntime runs the bert model only"})
            return
        from bert_dynamic import onnx_session
        from models.transformer import Config

        fn, why = onnx_session(Config(hidden=64, heads=4, ffn=256, layers=1, vocab=1000)
                               if quick else Config())
        if fn is None:
            conn.send({"skip": why})
            return
    else:
        fn = make()
        if mode == "xla":
            fn = tf.function(fn.python_function, jit_compile=True,
                             input_signature=fn.input_signature)
    times = []
    for p in range(PASSES):
        for request in requests:
            t = time.perf_counter()
            out = fn(*request)
            np.asarray(out.numpy() if hasattr(out, "numpy") else out)
            times.append(time.perf_counter() - t)
        if p == 0:
            cold_s = time.perf_counter() - start
    compiles, compile_s, in_tf = "-", "-", "-"
    if ours:
        clusters = modes.disc_stats_clusters()
        # Calls that ran in TF: while compiling, or by the guard.
        in_tf = str(modes.disc_fallbacks().get("compiling", 0) + sum(
            c["self_guard"]["tf_runs"] for c in clusters))
        modes.wait_for_async_compiles()  # the count includes the last one
        clusters = modes.disc_stats_clusters()
        compiles = str(modes.disc_compiles())
        compile_s = f"{_compile_seconds(clusters):.2f}"
    elif mode == "xla":
        compiles = str(len({tuple(a.shape for a in r) for r in requests}))
    conn.send({"cold_s": cold_s, "first_s": times[0], "compiles": compiles,
               "compile_s": compile_s, "calls_in_tf": in_tf,
               "to_steady": calls_to_steady(times, len(requests))})


def run_sample(mode: str, model_name: str, quick: bool) -> dict:
    """One cold pass of `mode` in a spawned process (TF is not fork-safe)."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_sample, args=(child, mode, model_name, quick))
    proc.start()
    child.close()
    try:
        result = parent.recv()
    except EOFError:
        result = {"skip": "worker died"}
    proc.join()
    if proc.exitcode not in (0, None) and "skip" not in result:
        result = {"skip": f"worker exit code {proc.exitcode}"}
    return result


def summarize(samples: Dict[str, List[dict]]) -> List[dict]:
    """One row per mode: median cold and first-call seconds, the ratios of
    the medians to tf's and xla's."""
    med = {m: statistics.median(s["cold_s"] for s in runs) for m, runs in samples.items()}
    rows = []
    for mode, runs in samples.items():
        row = {"mode": mode, "cold_s": med[mode],
               "first_call_s": statistics.median(s["first_s"] for s in runs),
               "min_s": min(s["cold_s"] for s in runs), "max_s": max(s["cold_s"] for s in runs),
               "to_steady": statistics.median(s["to_steady"] for s in runs),
               "compiles": runs[0]["compiles"], "compile_s": runs[0]["compile_s"],
               "calls_in_tf": runs[0]["calls_in_tf"]}
        for ref in ("tf", "xla"):
            if ref in med:
                row[f"cold/{ref}"] = f"{med[mode] / med[ref]:.2f}x"
        rows.append(row)
    return rows


def main() -> None:
    from models.cold_start_models import MODELS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="bert",
                        help="comma list of " + ",".join(MODELS) + ", or all")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default="tf,xla,onnxruntime,ours,ours_async",
                        help="comma list of " + ",".join(MODES))
    parser.add_argument("--quick", action="store_true", help="tiny models (smoke run)")
    args = parser.parse_args()
    wanted = args.modes.split(",")
    unknown = set(wanted) - set(MODES)
    if unknown:
        parser.error(f"unknown modes {sorted(unknown)}")
    models = list(MODELS) if args.model == "all" else args.model.split(",")
    if set(models) - set(MODELS):
        parser.error(f"unknown models {sorted(set(models) - set(MODELS))}")
    from platform_info import cpu_summary

    print(cpu_summary())
    for model in models:
        samples: Dict[str, List[dict]] = {m: [] for m in wanted}
        skipped: Dict[str, str] = {}
        for r in range(args.rounds):
            order = wanted[r % len(wanted):] + wanted[:r % len(wanted)]
            for mode in order:
                if mode in skipped:
                    continue
                result = run_sample(mode, model, args.quick)
                if "skip" in result:
                    skipped[mode] = result["skip"]
                    print(f"{model} {mode} skipped: {result['skip']}")
                    continue
                samples[mode].append(result)
                print(f"round {r + 1}: {model} {mode} cold {result['cold_s']:.2f} s", flush=True)
        samples = {m: s for m, s in samples.items() if s}
        print_table(f"{model}: cold pass over 6 shapes in a fresh process, median of "
                    f"{args.rounds} (ratios < 1.00x: faster than the reference)",
                    summarize(samples))


if __name__ == "__main__":
    sys.exit(main())
