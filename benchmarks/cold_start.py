"""Cold start of bert_dynamic.py's encoder, every sample in a fresh process:
stock TF, XLA (jit_compile=True), ONNX Runtime (when tf2onnx and onnxruntime
are installed) and blade_disc_tf with sync and async compile, and with the
product defaults (ours_default: async compile and the self-guard on).

Cold = a new tf.function's first pass over the workload: tracing, Grappler,
compiling (ours with an empty compile cache, XLA once per shape; ONNX
Runtime's export and session included) and every request.  bert_dynamic.py
times one cold pass per mode, one after another in one process, so a
mode's cold time carries the load of that minute and whatever the earlier
modes left warm.  Here each sample is its own spawned process, whose TF
runtime is warmed up first by one small op (the process start is nobody's
cold start); the rounds rotate the order of the modes, and the table shows
each mode's median and the ratios of the medians.

    python benchmarks/cold_start.py [--workload B] [--rounds 3] [--modes tf,xla,ours,ours_async]
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


def _sample(conn, mode: str, workload_name: str, layers: int, quick: bool) -> None:
    """Child body: one cold pass of `mode`; sends {"cold_s", "first_s",
    "compiles"} or {"skip": why}."""
    import numpy as np
    import tensorflow as tf

    import modes
    from bert_dynamic import onnx_session, workload
    from models.transformer import Config, make_weights, signature_ids, transformer

    config = Config(hidden=64, heads=4, ffn=256, layers=1, vocab=1000) if quick else Config(
        layers=layers)
    requests = workload(workload_name, config.vocab, quick)
    weights = make_weights(config)
    tf.matmul(tf.ones([8, 8]), tf.ones([8, 8])).numpy()  # TF's runtime and pools up
    ours = mode.startswith("ours")
    if ours:  # the other modes never import blade_disc_tf
        modes.configure_disc(True, mode in ("ours_async", "ours_default"))
        if mode == "ours_default":
            import blade_disc_tf as disc

            disc.set_options(self_guard=True)
    start = time.perf_counter()
    if mode == "onnxruntime":
        fn, why = onnx_session(config)
        if fn is None:
            conn.send({"skip": why})
            return
    else:
        fn = tf.function(lambda ids, mask: transformer(ids, mask, weights, config),
                         input_signature=signature_ids(), jit_compile=(mode == "xla") or None)
    times = []
    for ids, mask in requests:
        t = time.perf_counter()
        out = fn(ids, mask)
        np.asarray(out.numpy() if hasattr(out, "numpy") else out)
        times.append(time.perf_counter() - t)
    cold_s = time.perf_counter() - start
    compiles, in_tf = "-", "-"
    if ours:
        compiles = str(modes.disc_compiles())
        if mode in ("ours_async", "ours_default"):
            # Calls of the pass that ran in TF: while compiling, or by the guard.
            in_tf = str(modes.disc_fallbacks().get("compiling", 0) + sum(
                c["self_guard"]["tf_runs"] for c in modes.disc_stats_clusters()))
            modes.wait_for_async_compiles()  # untimed: the count includes the last one
            compiles = str(modes.disc_compiles())
    elif mode == "xla":
        compiles = str(len({r[0].shape for r in requests}))
    conn.send({"cold_s": cold_s, "first_s": times[0], "compiles": compiles,
               "calls_in_tf": in_tf})


def run_sample(mode: str, workload_name: str, layers: int, quick: bool) -> dict:
    """One cold pass of `mode` in a spawned process (TF is not fork-safe)."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_sample, args=(child, mode, workload_name, layers, quick))
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
               "compiles": runs[0]["compiles"], "calls_in_tf": runs[0]["calls_in_tf"]}
        for ref in ("tf", "xla"):
            if ref in med:
                row[f"cold/{ref}"] = f"{med[mode] / med[ref]:.2f}x"
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", default="B", help="A, B or C (bert_dynamic.py's)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--modes", default="tf,xla,onnxruntime,ours,ours_async",
                        help="comma list of " + ",".join(MODES))
    parser.add_argument("--quick", action="store_true", help="tiny model and workload (smoke run)")
    args = parser.parse_args()
    wanted = args.modes.split(",")
    unknown = set(wanted) - set(MODES)
    if unknown:
        parser.error(f"unknown modes {sorted(unknown)}")
    samples: Dict[str, List[dict]] = {m: [] for m in wanted}
    skipped: Dict[str, str] = {}
    for r in range(args.rounds):
        order = wanted[r % len(wanted):] + wanted[:r % len(wanted)]
        for mode in order:
            if mode in skipped:
                continue
            result = run_sample(mode, args.workload, args.layers, args.quick)
            if "skip" in result:
                skipped[mode] = result["skip"]
                print(f"{mode} skipped: {result['skip']}")
                continue
            samples[mode].append(result)
            print(f"round {r + 1}: {mode} cold {result['cold_s']:.2f} s", flush=True)
    samples = {m: s for m, s in samples.items() if s}
    print_table(f"Workload {args.workload}: cold pass in a fresh process, median of "
                f"{args.rounds} (ratios < 1.00x: faster than the reference)", summarize(samples))


if __name__ == "__main__":
    sys.exit(main())
