"""BERT-base-like encoder on dynamic batch/sequence workloads: stock TF
(tf.function and TF1 Session), XLA (jit_compile=True), ONNX Runtime (when
tf2onnx and onnxruntime are installed) and blade_disc_tf (sync and async
compile), all in this process; plus the GEMM floors: the model's GEMMs alone
through our compiler, and the same GEMMs in stock TF (how much of stock TF's
time is GEMM, i.e. the most fusion alone can gain).

Workload A is BladeDISC's published request sequence (batch
2,2,4,1,1,8,8,2,16,2 at seq 128); B is 40 seeded requests with batch 1-8 and
seq 16-256; C is 16 requests at batch 1, seq 8-64.  Cold = the first pass
over the workload on a fresh function
(tracing, compiling, exporting included); steady = the sum over requests of
each request's median over --repeats calls, the modes interleaved per request
in a rotating order so that load drift hits them alike.  The cold column is
one pass per mode, one mode after another: cold_start.py repeats it in fresh
processes and gives medians.

    python benchmarks/bert_dynamic.py [--layers 4] [--repeats 3] [--workload AB] [--quick]
"""
from __future__ import annotations

import argparse
import atexit
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.protobuf import config_pb2  # noqa: E402

import modes  # noqa: E402
from models.transformer import Config, gemm_floor, make_weights, signature_ids, transformer  # noqa: E402
from platform_info import cpu_summary  # noqa: E402
from timing import print_table  # noqa: E402

WORKLOAD_A_BATCHES = [2, 2, 4, 1, 1, 8, 8, 2, 16, 2]


@dataclass
class Mode:
    name: str
    make: Callable[[], Optional[Callable]]  # None: mode unavailable (reason printed)
    ours: bool = False
    async_compile: bool = False
    floor: bool = False                       # runs the GEMM-floor requests
    launches: str = "-"
    compiles: str = "-"


def workload(name: str, vocab: int, quick: bool, seed: int = 0) -> List[Tuple[np.ndarray, np.ndarray]]:
    """(ids, mask) requests; masks pad a random tail of each row."""
    rng = np.random.default_rng(seed)
    if name == "A":
        shapes = [(b, 16 if quick else 128) for b in WORKLOAD_A_BATCHES]
    elif name == "C":  # latency-bound: batch 1, short sequences
        shapes = [(1, int(s)) for s in rng.integers(8, 17 if quick else 65, 8 if quick else 16)]
    else:
        shapes = [(int(rng.integers(1, 5 if quick else 9)), int(rng.integers(4 if quick else 16, 33 if quick else 257)))
                  for _ in range(8 if quick else 40)]
    requests = []
    for b, s in shapes:
        ids = rng.integers(0, vocab, (b, s)).astype(np.int32)
        lengths = rng.integers(max(1, s // 2), s + 1, (b, 1))
        requests.append((ids, (np.arange(s)[None, :] < lengths).astype(np.int32)))
    return requests


class TF1Session:
    """The model in a TF1 graph and Session (same seeded weights)."""

    def __init__(self, config: Config) -> None:
        graph = tf.Graph()
        with graph.as_default():
            self.ids = tf.compat.v1.placeholder(tf.int32, [None, None])
            self.mask = tf.compat.v1.placeholder(tf.int32, [None, None])
            self.out = transformer(self.ids, self.mask, make_weights(config), config)
            init = tf.compat.v1.global_variables_initializer()
        self.sess = tf.compat.v1.Session(graph=graph)
        self.sess.run(init)

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self.sess.run(self.out, {self.ids: ids, self.mask: mask})

    def launches(self, ids: np.ndarray, mask: np.ndarray) -> Tuple[int, np.ndarray]:
        """One step: (DiscLaunch ops in its partition graphs, its output)."""
        options = config_pb2.RunOptions(output_partition_graphs=True)
        metadata = config_pb2.RunMetadata()
        out = self.sess.run(self.out, {self.ids: ids, self.mask: mask}, options=options,
                            run_metadata=metadata)
        return sum(n.op == "DiscLaunch" for g in metadata.partition_graphs for n in g.node), out


def onnx_session(config: Config) -> Tuple[Optional[Callable], Optional[str]]:
    """(ids, mask -> ONNX Runtime's output, None), the model (same seeded
    weights) exported with tf2onnx; (None, why) when it cannot be.  Its pool
    threads do not spin between requests: in their own process they kept
    both cores busy through the next mode's timed calls (workload C: ours
    1.03-1.05x stock TF's time with ONNX Runtime spinning, 0.79-0.81x without)."""
    try:
        import onnxruntime as ort
        import tf2onnx
    except ImportError as e:
        return None, f"{e} (pip install onnxruntime tf2onnx)"
    weights = make_weights(config)
    fn = tf.function(lambda ids, mask: transformer(ids, mask, weights, config),
                     input_signature=signature_ids())
    try:
        proto, _ = tf2onnx.convert.from_function(fn, input_signature=signature_ids(), opset=17)
    except Exception as e:  # tf2onnx lags TF releases: report, do not abort the run
        return None, f"tf2onnx could not export the model: {e!r:.300}"
    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    sess = ort.InferenceSession(proto.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return (lambda ids, mask: sess.run(None, {names[0]: ids, names[1]: mask})[0]), None


def _onnx_worker(conn, config: Config) -> None:
    """Subprocess body: exports the model (onnx_session), then answers
    (ids, mask) with ONNX Runtime's output, "rss" with its own VmHWM in MB,
    None by exiting."""
    run, why = onnx_session(config)
    if run is None:
        conn.send(("skip", why))
        return
    conn.send(("ready", None))
    while True:
        msg = conn.recv()
        if msg is None:
            return
        if msg == "rss":
            conn.send(modes.peak_rss_mb())
            continue
        conn.send(run(*msg))


class OnnxRuntimeProcess:
    """ONNX Runtime in its own process (spawned, not forked: TF is not
    fork-safe): its ~12 GB of export and session memory would otherwise stay
    in this process and in every later mode's RSS.  A call pipes the request
    there and the output back (a few ms of copying, inside its latency)."""

    def __init__(self, config: Config) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_onnx_worker, args=(child, config), daemon=True)
        self.proc.start()
        child.close()
        try:
            status, detail = self.conn.recv()
        except EOFError:
            self.proc.join(5)
            status, detail = "skip", f"worker died (exit code {self.proc.exitcode})"
        self.skipped = None if status == "ready" else detail

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        self.conn.send((ids, mask))
        return self.conn.recv()

    def peak_rss_mb(self) -> float:
        """The worker's VmHWM: export, session and every request so far."""
        self.conn.send("rss")
        return self.conn.recv()

    def close(self) -> None:
        if self.proc.is_alive():
            try:
                self.conn.send(None)
            except OSError:
                pass
            self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()


def onnx_runtime(config: Config) -> Optional[Callable]:
    worker = OnnxRuntimeProcess(config)
    if worker.skipped is not None:
        print(f"ONNX Runtime mode skipped: {worker.skipped}")
        worker.close()
        return None
    atexit.register(worker.close)
    return worker


def switched(fn: Callable, self_guard: bool = False, **policy: Any) -> Callable:
    """Ours with kernel policy fields set for the call (disc.kernel_policy),
    so one run times a kernel change both ways: skinny_gemm="off" (skinny
    GEMMs on Eigen) or "wide_tile" (the 6 x 64 tile for all m),
    multi_gemm=False (merged Q/K/V products one at a time),
    gemm_epilogue_fusion=False (epilogues as a second pass over C instead of
    per block while in cache), kernel_threads=1 (GEMMs on one thread: a
    deliberately slowed policy).  self_guard: the self-guard on for the call
    (off in every other mode of ours, so they time our code, not TF's)."""
    import blade_disc_tf as disc

    def call(*args):
        if self_guard:
            disc.set_options(self_guard=True)
        try:
            with disc.kernel_policy(**policy):
                out = fn(*args)
                return out.numpy() if hasattr(out, "numpy") else out
        finally:
            if self_guard:
                disc.set_options(self_guard=False)
    return call


def build_modes(config: Config, weights, names: str) -> List[Mode]:
    def model(ids, mask):
        return transformer(ids, mask, weights, config)

    def floor(x):
        return gemm_floor(x, weights, config)

    def fresh(fn, spec=None, **kw):
        return lambda: tf.function(fn, input_signature=spec or signature_ids(), **kw)

    floor_spec = [tf.TensorSpec([None, None, config.hidden], tf.float32)]
    all_modes = [
        Mode("tf", fresh(model)),
        Mode("tf1_session", lambda: TF1Session(config)),
        Mode("xla", fresh(model, jit_compile=True)),
        Mode("onnxruntime", lambda: onnx_runtime(config)),
        Mode("ours", fresh(model), ours=True),
        Mode("ours_async", fresh(model), ours=True, async_compile=True),
        Mode("ours_eigen_gemm", lambda: switched(fresh(model)(), skinny_gemm="off"), ours=True),
        Mode("ours_wide_tile", lambda: switched(fresh(model)(), skinny_gemm="wide_tile"),
             ours=True),
        Mode("ours_no_multi", lambda: switched(fresh(model)(), multi_gemm=False), ours=True),
        Mode("ours_epilogue_pass",
             lambda: switched(fresh(model)(), gemm_epilogue_fusion=False), ours=True),
        Mode("ours_guarded", lambda: switched(fresh(model)(), self_guard=True), ours=True),
        Mode("ours_slowed", lambda: switched(fresh(model)(), kernel_threads=1), ours=True),
        Mode("ours_slowed_guarded",
             lambda: switched(fresh(model)(), self_guard=True, kernel_threads=1), ours=True),
        Mode("gemm_floor(ours)", fresh(floor, floor_spec), ours=True, floor=True),
        # The same GEMMs in stock TF (oneDNN): tf / this is the most a fused
        # model can gain over stock TF without faster GEMMs than TF's.
        Mode("gemm_floor(tf)", fresh(floor, floor_spec), floor=True),
    ]
    wanted = set(names.split(","))
    return [m for m in all_modes if m.name.split("(")[0] in wanted or "all" in wanted]


def run_workload(label: str, requests, floor_requests, mode_list: List[Mode], repeats: int,
                 clock: Callable[[], float] = time.perf_counter) -> None:
    import blade_disc_tf as disc

    timelines, runners, results = {}, {}, {}
    for mode in mode_list:
        modes.configure_disc(mode.ours, mode.async_compile)
        reqs = floor_requests if mode.floor else requests
        modes.reset_peak_rss()
        rss_before = modes.rss_mb()
        start = time.perf_counter()
        fn = mode.make()
        if fn is None:
            continue
        make_s = time.perf_counter() - start
        check = fn.launches if isinstance(fn, TF1Session) else (
            (lambda *r: modes.first_call_launches(fn, r)) if hasattr(fn, "get_concrete_function") else None)
        first = None
        if check is not None:  # the cold pass's first call, with TF's graphs recorded
            def first():
                launches, out = check(*reqs[0])
                mode.launches = str(launches)
                return out
        timeline = modes.Timeline(mode.name, clock)
        outputs = timeline.run_pass(fn, reqs, cold=True, first=first)
        timeline.cold_s += make_s
        if mode.async_compile:
            modes.wait_for_async_compiles()
        if mode.ours:
            mode.compiles = str(modes.disc_compiles())
            fallbacks = modes.disc_fallbacks()
            ran_in_tf = fallbacks.pop("compiling", 0)
            if ran_in_tf:
                print(f"{mode.name}: {ran_in_tf} cluster call(s) ran in TF while compiling")
            if fallbacks:
                print(f"{mode.name}: FALLBACKS {fallbacks}")
        elif mode.name == "xla":
            mode.compiles = str(len({r[0].shape for r in reqs}))  # XLA: once per shape
        if isinstance(fn, OnnxRuntimeProcess):  # its own process: its whole peak
            results[mode.name] = (outputs, fn.peak_rss_mb(), 0.0)
        else:
            results[mode.name] = (outputs, modes.peak_rss_mb(), rss_before)
        timelines[mode.name], runners[mode.name] = timeline, (fn, reqs)
    disc.enable(async_compile=False)  # sync reloads of ours from the disk cache below
    for name, (fn, reqs) in runners.items():  # untimed warm-up round
        fn(*reqs[0])
    names = list(runners)
    for rep in range(repeats):  # per request, every mode in a rotating order
        for i in range(len(requests)):
            shift = (i + rep) % len(names)
            for name in names[shift:] + names[:shift]:
                fn, reqs = runners[name]
                timelines[name].time_request(i, fn, reqs[i])
    print_results(label, mode_list, timelines, results)


def print_results(label: str, mode_list: List[Mode], timelines, results) -> None:
    want = results["tf"][0] if "tf" in results else None
    rows = []
    for mode in mode_list:
        if mode.name not in timelines:
            continue
        t, (outputs, peak, rss_before) = timelines[mode.name], results[mode.name]
        diff = "-" if want is None or mode.floor else f"{modes.max_diff(outputs, want):.2e}"
        rows.append({"mode": mode.name, "cold_s": t.cold_s, "steady_s": t.steady_s,
                     "p50_ms": 1e3 * modes.percentile(t.latencies, 50),
                     "p90_ms": 1e3 * modes.percentile(t.latencies, 90),
                     "compiles": mode.compiles, "DiscLaunch": mode.launches,
                     "peak_rss_MB": peak, "rss_growth_MB": peak - rss_before,
                     "max_diff_vs_tf": diff})
    print_table(f"Workload {label} (xla compiles = distinct shapes)", rows)
    base = {name: timelines[name] for name in ("tf", "xla", "gemm_floor(ours)", "gemm_floor(tf)")
            if name in timelines}
    if not base:
        return
    ratio_rows = []
    for name, t in timelines.items():
        row = {"mode": name}
        for ref, rt in base.items():
            row[f"steady/{ref}"] = modes.ratio(t.steady_s, rt.steady_s)
        for ref in ("tf", "xla"):
            if ref in base:
                row[f"cold/{ref}"] = modes.ratio(t.cold_s, base[ref].cold_s)
        ratio_rows.append(row)
    print_table(f"Workload {label}: time ratios (< 1.00x: faster than the reference)", ratio_rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workload", default="AB", help="any of A, B, C")
    parser.add_argument("--modes", default="all",
                        help="comma list of tf,tf1_session,xla,onnxruntime,ours,ours_async,"
                             "ours_eigen_gemm,ours_wide_tile,gemm_floor (ours and tf)")
    parser.add_argument("--quick", action="store_true", help="tiny model and workloads (smoke run)")
    parser.add_argument("--cpu", action="store_true",
                        help="steady times in process CPU time (all threads) instead of wall time")
    args = parser.parse_args()
    if args.cpu and ({"onnxruntime", "all"} & set(args.modes.split(","))):
        parser.error("--cpu times this process's CPU; onnxruntime runs in a subprocess")
    config = (Config(hidden=64, heads=4, ffn=256, layers=1, vocab=1000) if args.quick
              else Config(layers=args.layers))
    repeats = 1 if args.quick else args.repeats
    weights = make_weights(config)
    print(f"CPU: {cpu_summary()}")
    print(f"model: hidden {config.hidden}, heads {config.heads}, ffn {config.ffn}, "
          f"layers {config.layers}; {os.cpu_count()} CPUs; steady = sum of per-request medians of {repeats} "
          "interleaved call(s)" + (" (process CPU time)" if args.cpu else ""))
    print("peak_rss_MB: VmHWM over each mode's cold pass, " + (
        "reset before each mode" if modes.reset_peak_rss()
        else "CUMULATIVE (this kernel refuses clear_refs)") +
        "; rss_growth_MB: that peak minus VmRSS when the mode started (earlier modes' "
        "memory stays resident); onnxruntime runs in a subprocess: its whole VmHWM")
    for label in args.workload:
        requests = workload(label, config.vocab, args.quick)
        rng = np.random.default_rng(1)
        floor_requests = [(rng.standard_normal(ids.shape + (config.hidden,)).astype(np.float32),)
                          for ids, _ in requests]
        run_workload(label, requests, floor_requests, build_modes(config, weights, args.modes),
                     repeats, time.process_time if args.cpu else time.perf_counter)


if __name__ == "__main__":
    sys.exit(main())
