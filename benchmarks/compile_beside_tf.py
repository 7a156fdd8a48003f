"""Stock TF's cold pass beside one of our background compiles, in one process:
how much the compile slows the calls that run in TF meanwhile, with the
compiler in this process (its lowering, passes and codegen hold the GIL
that TF's Python call path needs) or in the compile worker (a process of
its own; blade_disc_tf/_compile_worker.py).

The model's clusters are recorded once (the requests DiscLaunch sends);
then each round, in rotated order, times the cold pass (a new tf.function
traced, optimized by stock Grappler, over the model's 6 requests) of:

  alone        no compile running
  in_process   service.compile_request of the model's largest cluster on a
               thread (background options: the system compiler at nice 15),
               as async compiles ran before the compile worker
  worker       the compile bridge's path for the same request (request
               index lookup here, then the compile worker, already started)
  worker_boot  the same with a new worker (its start-up included)

every compile into a fresh cache directory, so each compiles from scratch;
the compile is waited for before the next sample.  Prints medians, the
ratios to `alone`, and the CPU seconds of the compiling thread of this
process (thread_s: the Python work that competed for this process's GIL;
the system compiler and the worker are other processes).

    python benchmarks/compile_beside_tf.py [--model resnet50] [--rounds 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from timing import print_table  # noqa: E402

MODES = ("alone", "in_process", "worker", "worker_boot")


def record_requests(make, requests) -> list[tuple[dict, bytes]]:
    """(request, FunctionDef bytes) of every cluster DiscLaunch asks to
    compile on the model's first request (nothing is compiled)."""
    import blade_disc_tf as disc
    from blade_disc_tf import _compile_bridge

    seen: list[tuple[dict, bytes]] = []
    original = _compile_bridge.compile_request

    def record(request, fdef, options, worker):
        seen.append((request, fdef))
        return {"ok": False, "error": "recorded, not compiled"}

    _compile_bridge.compile_request = record
    try:
        disc.enable(cache_dir=tempfile.mkdtemp(), async_compile=False, self_guard=False)
        make()(*requests[0])
    finally:
        _compile_bridge.compile_request = original
        disc.disable()
    return seen


def cold_pass(make, requests) -> float:
    import numpy as np

    start = time.perf_counter()
    fn = make()
    for request in requests:
        np.asarray(fn(*request))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    import tensorflow as tf
    from blade_disc_tf import _compile_bridge, _compile_worker
    from blade_disc_tf.compiler import service
    from blade_disc_tf.compiler.options import CompileOptions
    from blade_disc_tf.compiler.service import BACKGROUND_NICE
    from models.cold_start_models import MODELS
    from platform_info import cpu_summary

    print(cpu_summary())
    model = MODELS[args.model]
    requests, make = model.requests(False), model.build(False)
    tf.matmul(tf.ones([8, 8]), tf.ones([8, 8])).numpy()
    request, fdef = max(record_requests(make, requests), key=lambda r: len(r[1]))
    root = tempfile.mkdtemp(prefix="disc_beside_")
    warm = _compile_worker.CompileWorker(BACKGROUND_NICE)

    def options() -> CompileOptions:
        return CompileOptions(cache_dir=tempfile.mkdtemp(dir=root), background=True)

    compilers = {
        "alone": None,
        "in_process": lambda: service.compile_request(request, fdef, options()),
        "worker": lambda: _compile_bridge.compile_request(request, fdef, options(), warm),
        "worker_boot": lambda: _fresh_worker_compile(request, fdef, options()),
    }
    compilers["worker"]()  # starts the warm worker
    cold_pass(make, requests)  # TF's own first-use costs are nobody's
    samples: dict[str, list[float]] = {m: [] for m in MODES}
    compile_s: dict[str, list[float]] = {m: [] for m in MODES}
    thread_s: dict[str, list[float]] = {m: [] for m in MODES}
    for r in range(args.rounds):
        for mode in MODES[r % len(MODES):] + MODES[:r % len(MODES)]:
            replies: list[tuple[dict, float]] = []
            thread = None
            if compilers[mode] is not None:
                thread = threading.Thread(target=_timed, args=(compilers[mode], replies))
                thread.start()
            samples[mode].append(cold_pass(make, requests))
            if thread is not None:
                thread.join()
                reply, cpu_s = replies[0]
                assert reply["ok"], reply
                compile_s[mode].append(reply["seconds"])
                thread_s[mode].append(cpu_s)
            print(f"round {r + 1}: {mode} {samples[mode][-1]:.3f} s", flush=True)
    warm.stop()
    alone = statistics.median(samples["alone"])
    rows = [{"mode": m, "cold_s": statistics.median(samples[m]),
             "min_s": min(samples[m]), "max_s": max(samples[m]),
             "compile_s": statistics.median(compile_s[m]) if compile_s[m] else "-",
             "thread_s": statistics.median(thread_s[m]) if thread_s[m] else "-",
             "vs_alone": f"{statistics.median(samples[m]) / alone:.2f}x"} for m in MODES]
    print_table(f"{args.model}: stock TF cold pass beside one compile of its largest cluster "
                f"({len(fdef)} bytes), median of {args.rounds}", rows)


def _timed(compile_fn, replies: list) -> None:
    """compile_fn's reply and this thread's CPU seconds for it."""
    t0 = time.thread_time()
    reply = compile_fn()
    replies.append((reply, time.thread_time() - t0))


def _fresh_worker_compile(request, fdef, options) -> dict:
    from blade_disc_tf import _compile_bridge, _compile_worker
    from blade_disc_tf.compiler.service import BACKGROUND_NICE

    worker = _compile_worker.CompileWorker(BACKGROUND_NICE)
    try:
        return _compile_bridge.compile_request(request, fdef, options, worker)
    finally:
        worker.stop()


if __name__ == "__main__":
    main()
