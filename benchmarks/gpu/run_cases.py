"""Runs the GPU validation bundle (make_cases.py) on a GPU machine without
TF (issue 26; GPU-BACKEND-BRIEF.md 4B): every case and shape through its
library's disc_entry, on libdisc_harness.so (harness.cc) with torch's
current stream and torch's caching allocator; checked against stock-TF
float64 outputs (small shapes) or a torch float64 reference of TF's op
semantics (reference.py); timed against PyTorch eager running TF's
decomposition op by op, PyTorch's fused ops, torch.compile(dynamic=True)
for the BERT layer, and the card's measured device-to-device copy
bandwidth.  Prints one table and writes <out>/results.csv.

--dry-run needs neither a GPU nor torch: with a driver stand-in
(tests/cpp_layer/fake_cuda_driver.cc, nothing executes on a device) it
drives the same harness C API, host code and checks on numpy buffers, and
checks reference.py against the shipped TF float64 outputs."""
from __future__ import annotations

import argparse
import csv
import ctypes
import os
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import reference  # noqa: E402

MAX_RANK = 8
DEVICE_CUDA = 1


class DiscBuffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("rank", ctypes.c_int32),
                ("dims", ctypes.c_int64 * MAX_RANK)]


class DiscDeviceInfo(ctypes.Structure):
    _fields_ = [("sm_count", ctypes.c_int32), ("cc_major", ctypes.c_int32),
                ("cc_minor", ctypes.c_int32), ("max_threads_per_sm", ctypes.c_int32),
                ("smem_per_block_optin", ctypes.c_int32), ("l2_bytes", ctypes.c_int64)]


Alloc = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                         ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t)


class Harness:
    """libdisc_harness.so's C API (harness.cc)."""

    def __init__(self, path: str, driver: str, cublaslt: str) -> None:
        self.lib = ctypes.CDLL(path)
        P, I32, S = ctypes.c_void_p, ctypes.c_int32, ctypes.c_size_t
        for name, res, args in [
                ("disc_harness_create", P, [ctypes.c_char_p, ctypes.c_char_p, P, S]),
                ("disc_harness_load", P, [P, P, S]), ("disc_harness_unload", None, [P]),
                ("disc_harness_device_info", I32, [P, P, ctypes.POINTER(DiscDeviceInfo), P, S]),
                ("disc_harness_call", I32, [P, P, P, P, ctypes.POINTER(DiscBuffer), I32, I32,
                                            Alloc, P, P, S, P, S]),
                ("disc_harness_abi_version", I32, [])]:
            fn = getattr(self.lib, name)
            fn.restype, fn.argtypes = res, args
        self.err = ctypes.create_string_buffer(2048)
        self.backend = self.lib.disc_harness_create(driver.encode(), cublaslt.encode(),
                                                    self.err, len(self.err))
        if not self.backend:
            raise RuntimeError(f"harness: {self.err.value.decode()}")

    def device_info(self, stream: int | None) -> DiscDeviceInfo:
        info = DiscDeviceInfo()
        if self.lib.disc_harness_device_info(self.backend, stream, ctypes.byref(info),
                                             self.err, len(self.err)):
            raise RuntimeError(f"device_info: {self.err.value.decode()}")
        return info


class Library:
    """One generated library: its disc_entry and its modules."""

    def __init__(self, harness: Harness, path: str) -> None:
        self.h, self.lib = harness, ctypes.CDLL(path)
        for fn in ("disc_abi_version", "disc_device", "disc_cuda_kernel_count"):
            getattr(self.lib, fn).restype = ctypes.c_int32
        if self.lib.disc_abi_version() != harness.lib.disc_harness_abi_version():
            raise RuntimeError(f"{path}: ABI {self.lib.disc_abi_version()}, harness "
                               f"{harness.lib.disc_harness_abi_version()}")
        if self.lib.disc_device() != DEVICE_CUDA:
            raise RuntimeError(f"{path}: not a CUDA library")
        self.entry = ctypes.cast(self.lib.disc_entry, ctypes.c_void_p).value
        self.modules = harness.lib.disc_harness_load(self.lib._handle, harness.err,
                                                     len(harness.err))
        if not self.modules:
            raise RuntimeError(f"{path}: {harness.err.value.decode()}")

    def close(self) -> None:
        self.h.lib.disc_harness_unload(self.modules)


class Arrays:
    """Where buffers live: numpy (dry run) or torch on the GPU.  int32
    buffers are host memory on CUDA (disc_abi.h)."""

    def __init__(self, torch_mod: Any = None) -> None:
        self.torch = torch_mod

    def put(self, x: np.ndarray) -> Any:
        if self.torch is None:
            return np.require(x, requirements=["C", "A"])
        t = self.torch.from_numpy(np.require(x, requirements="C"))  # keeps 0-d
        return t if x.dtype == np.int32 else t.to("cuda", non_blocking=False)

    def empty(self, dtype: str, shape: tuple) -> Any:
        if self.torch is None:
            return np.empty(shape, common.DTYPES[dtype])
        tdt = getattr(self.torch, dtype)
        dev = "cpu" if dtype == "int32" else "cuda"
        return self.torch.empty(shape, dtype=tdt, device=dev)

    def ptr(self, a: Any) -> int | None:
        if self.torch is None:
            return a.ctypes.data if a.size else None
        return a.data_ptr() if a.numel() else None

    def host(self, a: Any) -> np.ndarray:
        return a if self.torch is None else a.detach().cpu().numpy()


class Caller:
    """disc_entry of one library on fixed inputs; outputs and scratch come
    from `arrays` through the harness's allocation callback."""

    def __init__(self, lib: Library, arrays: Arrays, inputs: list, out_dtypes: list[str],
                 stream: int | None, arena: Any = None) -> None:
        self.lib, self.arrays, self.inputs, self.stream = lib, arrays, inputs, stream
        # Scratch block (harness.cc: reused call after call on one stream).
        self.arena = arena
        self.arena_ptr = arrays.ptr(arena) if arena is not None else None
        self.arena_bytes = arena.nbytes if arena is not None and self.arena_ptr else 0
        self.out_dtypes = out_dtypes
        self.bufs = (DiscBuffer * max(len(inputs), 1))()
        for i, a in enumerate(inputs):
            self.bufs[i].data = arrays.ptr(a)
            self.bufs[i].rank = len(a.shape)
            for j, d in enumerate(a.shape):
                self.bufs[i].dims[j] = d
        self.outputs: dict[int, Any] = {}
        self.temps: list = []
        self.alloc = Alloc(self._alloc)  # kept alive with the caller

    def _alloc(self, user, index, rank, dims, nbytes):
        try:
            if index < 0:
                t = self.arrays.empty("float32", (max(1, (nbytes + 3) // 4),))
                self.temps.append(t)
            else:
                shape = tuple(dims[i] for i in range(rank))
                t = self.arrays.empty(self.out_dtypes[index], shape)
                self.outputs[index] = t
            return self.arrays.ptr(t)
        except Exception as e:  # an exception must not cross the C frames
            print(f"alloc failed: {e}", file=sys.stderr)
            return None

    def __call__(self, allow_tf32: bool = True) -> list:
        self.outputs, self.temps = {}, []
        h = self.lib.h
        rc = h.lib.disc_harness_call(h.backend, self.lib.modules, self.stream, self.lib.entry,
                                     self.bufs, len(self.inputs), int(allow_tf32), self.alloc,
                                     None, self.arena_ptr, self.arena_bytes, h.err, len(h.err))
        if rc:
            raise RuntimeError(f"disc_entry: code {rc}: {h.err.value.decode()}")
        return [self.outputs[i] for i in sorted(self.outputs)]


def load_inputs(bundle: str, entry: dict[str, Any]) -> list[np.ndarray]:
    """A shape's inputs: shipped .npy, else made from the seed; either way
    checked against the manifest's checksum."""
    out = []
    for spec in entry["inputs"]:
        f = spec.get("file")
        x = np.load(os.path.join(bundle, f)) if f else common.make_input(spec)
        if "checksum" in spec and not np.isclose(common.checksum(x), spec["checksum"],
                                                 rtol=1e-12, atol=1e-9):
            raise RuntimeError(f"input {spec} does not match its checksum")
        out.append(x)
    return out


def shipped(bundle: str, files: list | None) -> list[np.ndarray] | None:
    if not files or any(f is None for f in files):
        return None
    return [np.load(os.path.join(bundle, f)) for f in files]


def check_outputs(case: dict[str, Any], ours: list[np.ndarray], ref: list[np.ndarray],
                  scale: Any, tf_out: list[np.ndarray] | None, allow_tf32: bool
                  ) -> tuple[bool, float, str]:
    """(pass, worst error/allowed, note).  Against stock TF (when shipped),
    ours may differ by its own tolerance plus TF's distance from float64."""
    ok, worst, notes = len(ours) == len(ref), 0.0, []
    if not ok:
        notes.append(f"{len(ours)} outputs, expected {len(ref)}")
    for k, (o, r) in enumerate(zip(ours, ref)):
        allowed = common.tolerance(case["tolerance"], r, scale, allow_tf32)
        good, err, ratio = common.check(o, r, allowed)
        ok, worst = ok and good, max(worst, ratio)
        if not good:
            notes.append(f"out{k} max|err|={err:.3g}")
        if tf_out is not None:
            # |ours - tf| <= |ours - ref| + |tf - ref|: both within bounds.
            slack = allowed + np.abs(tf_out[k].astype(np.float64) - np.asarray(r, np.float64))
            if not common.check(o, tf_out[k], slack)[0]:
                ok = False
                notes.append(f"out{k} differs from stock TF")
    return ok, worst, "; ".join(notes)


def has_tf32_tolerance(case: dict[str, Any]) -> bool:
    return any(k.endswith("_tf32") for k in case["tolerance"])


def shape_label(entry: dict[str, Any]) -> str:
    return " ".join("x".join(str(d) for d in s["shape"]) or "()"
                    for s in entry["inputs"][:2])


def pick_build(case: dict[str, Any], arch: str) -> str:
    """The case's library for `arch`, else the newest one below it (its PTX
    is JIT-compiled by the driver)."""
    builds = case["builds"]
    if arch in builds:
        return builds[arch]["library"]
    num = int("".join(ch for ch in arch if ch.isdigit()))
    older = sorted((int("".join(ch for ch in a if ch.isdigit())), a) for a in builds)
    usable = [a for n, a in older if n <= num] or [older[-1][1]]
    return builds[usable[-1]]["library"]


def dry_run(args: argparse.Namespace) -> int:
    """No GPU, no torch: the harness with a driver stand-in, numpy buffers."""
    manifest = common.read_manifest(args.bundle)
    harness = Harness(args.harness, args.driver, args.cublaslt or "")
    arrays, np_ops, failures = Arrays(), reference.NumpyOps(), 0
    arena = arrays.empty("float32", (args.arena_mib << 18,)) if args.arena_mib else None
    info = harness.device_info(None)
    arch = f"sm_{info.cc_major}{info.cc_minor}"
    print(f"dry run: {manifest['tf_version']} bundle, stand-in device {arch}")
    for name, case in manifest["cases"].items():
        lib = Library(harness, os.path.join(args.bundle, pick_build(case, arch)))
        for entry in case["shapes"]:
            inputs = load_inputs(args.bundle, entry)
            caller = Caller(lib, arrays, [arrays.put(x) for x in inputs],
                            case["output_dtypes"], None, arena)
            notes = []
            try:
                outs = caller()
                ref_shapes = [tuple(r.shape) for r in reference.REFERENCES[case["op"]](
                    np_ops, *[x.astype(np.float64) for x in inputs])]
                if [tuple(o.shape) for o in outs] != ref_shapes:
                    notes.append(f"output shapes {[o.shape for o in outs]} != {ref_shapes}")
            except RuntimeError as e:  # without --cublaslt, GEMMs report its absence
                if args.cublaslt or "cuBLASLt not found" not in str(e):
                    notes.append(str(e))
            ref64 = shipped(args.bundle, entry.get("reference_f64"))
            tf_out = shipped(args.bundle, entry.get("expected"))
            if ref64 is not None and tf_out is not None:
                # Stock TF stands in for our outputs: the checks must pass it.
                x64 = [x.astype(np.float64) for x in inputs]
                scale = reference.abs_scale(case["op"], np_ops, x64)
                ok, ratio, why = check_outputs(case, tf_out, ref64, scale, tf_out, False)
                if ok != (entry["tf_error_ratio"] <= 1.0):
                    notes.append(f"check says {ok} for stock TF, make_cases "
                                 f"{entry['tf_error_ratio']:.3g}: {why}")
                elif not ok:   # TF CPU's half ops compute in half: looser than a GPU
                    print(f"  (stock TF CPU itself is {ratio:.3g}x the tolerance)")
            failures += bool(notes)
            verdict = "FAIL " + "; ".join(notes) if notes else "ok"
            print(f"{name:18s} {shape_label(entry):24s} {verdict}")
        lib.close()
    return 1 if failures else 0


def cublaslt_path() -> str:
    """The libcublasLt torch itself loaded (after one matmul), from
    /proc/self/maps: the CUDA wheels' location is not known in advance."""
    import torch
    a = torch.ones(64, 64, device="cuda")
    (a @ a).sum().item()
    with open("/proc/self/maps") as f:
        for line in f:
            if "libcublasLt.so" in line:
                return line.split()[-1]
    return ""


def cuda_time_us(fn: Callable[[], Any], warmup: int = 20, iters: int = 200, reps: int = 5,
                 max_s: float = 0.6) -> float:
    """Median over `reps` of the mean time per call (CUDA events on the
    current stream, host overhead included); fewer iterations for slow calls
    so one measurement stays under max_s."""
    import torch
    for _ in range(warmup):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    one_s = start.elapsed_time(end) / 1e3
    iters = max(3, min(iters, int(max_s / reps / max(one_s, 1e-7))))
    times = []
    for _ in range(reps):
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / iters)
    return statistics.median(times)


def copy_bandwidth_gbs(mib: int) -> float:
    """Device-to-device copy of `mib` MiB: bytes read + written per second."""
    import torch
    x = torch.empty(mib << 18, dtype=torch.float32, device="cuda")
    y = torch.empty_like(x)
    us = cuda_time_us(lambda: y.copy_(x), warmup=3, iters=20, reps=3)
    return 2 * x.numel() * 4 / (us * 1e-6) / 1e9


COLUMNS = ["device", "case", "shape", "check", "err_ratio", "ours_us", "eager_us",
           "fused_us", "compile_us", "speedup_eager", "gbps", "bw_share", "notes"]


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def print_table(rows: list[dict[str, Any]]) -> None:
    cols = [c for c in COLUMNS if c != "notes"] + ["notes"]
    width = {c: max(len(c), *(len(_fmt(r.get(c, ""))) for r in rows)) for c in cols[:-1]}
    print(" ".join(c.ljust(width.get(c, 0)) for c in cols))
    for r in rows:
        print(" ".join(_fmt(r.get(c, "")).ljust(width.get(c, 0)) for c in cols))


class GpuRun:
    """State of one run on the GPU: torch, the harness, the stream."""

    def __init__(self, args: argparse.Namespace) -> None:
        import torch
        self.torch, self.args, self.t0 = torch, args, time.monotonic()
        self.device = torch.cuda.get_device_name()
        self.stream = torch.cuda.Stream()
        self.cublaslt = args.cublaslt or cublaslt_path()
        self.harness = Harness(args.harness, args.driver, self.cublaslt)
        self.arrays, self.tops = Arrays(torch), reference.TorchOps()
        self.fused = reference.fused_ops()
        self.arena = (self.arrays.empty("float32", (args.arena_mib << 18,))
                      if args.arena_mib else None)
        self.rows: list[dict[str, Any]] = []
        # Rows reach results.csv and the log as they come: a run the time
        # limit ends still leaves what it measured.
        os.makedirs(args.out, exist_ok=True)
        self.csv_file = open(os.path.join(args.out, "results.csv"), "w", newline="")
        self.csv = csv.DictWriter(self.csv_file, fieldnames=COLUMNS)
        self.csv.writeheader()

    def left_s(self) -> float:
        return self.args.budget_s - (time.monotonic() - self.t0)

    def row(self, **kw: Any) -> dict[str, Any]:
        r = {"device": self.device, **kw}
        self.rows.append(r)
        self.csv.writerow(r)
        self.csv_file.flush()
        print("  " + " ".join(f"{k}={_fmt(v)}" for k, v in r.items() if k != "device"),
              flush=True)
        return r

    def reference64(self, op: str, dev_inputs: list) -> tuple[list, Any]:
        """TF's semantics in float64 on the GPU, and the |inputs| scale."""
        x64 = [x if x.dtype == self.torch.int32 else x.double() for x in dev_inputs]
        outs = [o.cpu().numpy() for o in reference.REFERENCES[op](self.tops, *x64)]
        scale = reference.abs_scale(op, self.tops, x64)
        return outs, None if scale is None else scale.cpu().numpy()

    def check_case(self, name: str, case: dict[str, Any], lib: Library) -> list:
        """Every shape of a case against its reference; returns the callers
        (with their device inputs) for timing."""
        callers = []
        for entry in case["shapes"]:
            inputs = load_inputs(self.args.bundle, entry)
            dev = [self.arrays.put(x) for x in inputs]
            caller = Caller(lib, self.arrays, dev, case["output_dtypes"],
                            self.stream.cuda_stream, self.arena)
            ref, scale = self.reference64(case["op"], dev)
            notes = []
            ref_tf = shipped(self.args.bundle, entry.get("reference_f64"))
            if ref_tf is not None:
                if not all(np.allclose(a, b, rtol=1e-9, atol=1e-12) for a, b in zip(ref, ref_tf)):
                    notes.append("torch float64 reference differs from TF's")
                ref = ref_tf
            tf_out = shipped(self.args.bundle, entry.get("expected"))
            for tf32 in ([False, True] if has_tf32_tolerance(case) else [True]):
                try:
                    outs = [self.arrays.host(o) for o in caller(tf32)]
                    self.torch.cuda.synchronize()
                    ok, ratio, why = check_outputs(case, outs, ref, scale, tf_out, tf32)
                except RuntimeError as e:
                    ok, ratio, why = False, float("inf"), str(e)
                self.row(case=name + (" tf32" if tf32 and has_tf32_tolerance(case) else ""),
                         shape=shape_label(entry), check="ok" if ok else "FAIL",
                         err_ratio=ratio, notes="; ".join(notes + [why] if why else notes))
            callers.append((entry, caller, dev))
        return callers

    def time_case(self, name: str, case: dict[str, Any], callers: list, copy_gbs: float) -> None:
        eager_fn = reference.REFERENCES[case["op"]]
        fused = self.fused.get(case["op"])
        for entry, caller, dev in callers:
            if self.left_s() < 20:
                self.row(case=name, shape=shape_label(entry), notes="timing skipped: budget")
                continue
            try:
                outs = caller(True)
                ours = cuda_time_us(lambda: caller(True))
                eager = cuda_time_us(lambda: eager_fn(self.tops, *dev))
                fused_us = cuda_time_us(lambda: fused(*dev)) if fused else ""
            except RuntimeError as e:
                self.row(case=name, shape=shape_label(entry), check="FAIL", notes=str(e))
                continue
            nbytes = sum(x.numel() * x.element_size() for x in dev + outs)
            gbps = nbytes / (ours * 1e-6) / 1e9
            self.row(case=name, shape=shape_label(entry), check="time", ours_us=ours,
                     eager_us=eager, fused_us=fused_us, speedup_eager=eager / ours, gbps=gbps,
                     bw_share=gbps / copy_gbs)

    def time_compile(self, name: str, case: dict[str, Any], lib: Library) -> None:
        """torch.compile(dynamic=True) of TF's decomposition vs ours over the
        case's timing shapes: first calls (compiles) and steady state."""
        torch = self.torch
        eager_fn = reference.REFERENCES[case["op"]]
        compiled = torch.compile(lambda *xs: eager_fn(self.tops, *xs), dynamic=True)
        from torch._dynamo.utils import counters
        graphs0 = counters["stats"]["unique_graphs"]
        totals = {"ours": 0.0, "compile": 0.0, "ours_first": 0.0, "compile_first": 0.0}
        for entry in case["timing_shapes"]:
            if self.left_s() < 30:
                self.row(case=name + " compile", notes="stopped: budget")
                break
            dev = [self.arrays.put(x) for x in load_inputs(self.args.bundle, entry)]
            caller = Caller(lib, self.arrays, dev, case["output_dtypes"],
                            self.stream.cuda_stream, self.arena)
            for key, fn in (("ours", lambda: caller(True)), ("compile", lambda: compiled(*dev))):
                t = time.perf_counter()
                fn()
                torch.cuda.synchronize()
                totals[key + "_first"] += time.perf_counter() - t
            ours = cuda_time_us(lambda: caller(True), warmup=3, reps=3, max_s=0.3)
            comp = cuda_time_us(lambda: compiled(*dev), warmup=3, reps=3, max_s=0.3)
            totals["ours"] += ours
            totals["compile"] += comp
            self.row(case=name + " compile", shape=shape_label(entry), check="time",
                     ours_us=ours, compile_us=comp)
        self.row(case=name + " compile total", check="time", ours_us=totals["ours"],
                 compile_us=totals["compile"],
                 notes=f"first calls: ours {totals['ours_first'] * 1e3:.1f} ms, torch.compile "
                       f"{totals['compile_first'] * 1e3:.1f} ms; recompiles "
                       f"{counters['stats']['unique_graphs'] - graphs0}")


def run_on_gpu(args: argparse.Namespace) -> int:
    """Correctness of every case first, then timing while the budget lasts."""
    import torch
    run = GpuRun(args)
    manifest = common.read_manifest(args.bundle)
    info = run.harness.device_info(run.stream.cuda_stream)
    arch = f"sm_{info.cc_major}{info.cc_minor}"
    with open(os.path.join(args.out, "env.txt"), "w") as f:
        f.write(f"device={run.device} arch={arch} sms={info.sm_count} l2={info.l2_bytes} "
                f"torch={torch.__version__} cuda={torch.version.cuda} "
                f"cublaslt={run.cublaslt}\n")
    print(f"device: {run.device} ({arch}, {info.sm_count} SMs)", flush=True)
    libs, callers = {}, {}
    with torch.cuda.stream(run.stream):
        for name, case in manifest["cases"].items():
            try:
                libs[name] = Library(run.harness, os.path.join(args.bundle, pick_build(case, arch)))
                callers[name] = run.check_case(name, case, libs[name])
            except RuntimeError as e:
                run.row(case=name, check="FAIL", notes=str(e))
        print(f"correctness done at {time.monotonic() - run.t0:.0f}s", flush=True)
        torch.backends.cuda.matmul.allow_tf32 = True  # TF's default for float GEMMs
        copy_gbs = copy_bandwidth_gbs(args.copy_mib)
        run.row(case="d2d copy", check="time", gbps=copy_gbs, bw_share=1.0)
        for name, case in manifest["cases"].items():
            if name in callers:
                run.time_case(name, case, callers[name], copy_gbs)
        for name, case in manifest["cases"].items():
            # torch.compile's first compile alone may take a minute or two.
            if case.get("timing_shapes") and name in libs and run.left_s() > 120:
                try:
                    run.time_compile(name, case, libs[name])
                except Exception as e:  # torch.compile's own failures end only this part
                    run.row(case=name + " compile", check="FAIL", notes=repr(e)[:200])
    torch.cuda.synchronize()
    run.csv_file.close()
    print_table(run.rows)
    failed = [r for r in run.rows if r.get("check") == "FAIL"]
    print(f"{len(failed)} failures; {time.monotonic() - run.t0:.0f}s")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", default=".gpu")
    ap.add_argument("--harness", required=True, help="libdisc_harness.so")
    ap.add_argument("--out", default="out")
    ap.add_argument("--driver", default="libcuda.so.1")
    ap.add_argument("--cublaslt", default="",
                    help="libcublasLt path (default: the one torch loaded)")
    ap.add_argument("--budget-s", type=float, default=330.0,
                    help="timing stops once this much time has passed")
    ap.add_argument("--copy-mib", type=int, default=1024,
                    help="size of the copy that measures the bandwidth reference")
    ap.add_argument("--arena-mib", type=int, default=256,
                    help="device scratch block for temps (0: every temp through torch)")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    if args.dry_run:
        return dry_run(args)
    return run_on_gpu(args)


if __name__ == "__main__":
    sys.exit(main())
