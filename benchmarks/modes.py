"""How the transformer benchmarks run one model several ways in one process:
stock TF, XLA and blade_disc_tf, each on a fresh tf.function, with a check of
what TF really executed (DiscLaunch present only in our modes), peak RSS and
latency percentiles."""
from __future__ import annotations

import statistics
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf

from models import coverage

Request = Sequence[np.ndarray]
_CACHE_ROOT: Optional[tempfile.TemporaryDirectory] = None  # removed at exit


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def peak_rss_mb() -> float:
    """VmHWM of this process (reset by reset_peak_rss where the kernel
    allows, otherwise cumulative over the whole run)."""
    return _status_mb("VmHWM")


def rss_mb() -> float:
    """VmRSS now: what earlier modes left resident is in every later peak."""
    return _status_mb("VmRSS")


def reset_peak_rss() -> bool:
    """Restarts VmHWM from the current RSS (Linux clear_refs 5)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if len(values) else float("nan")


def configure_disc(ours: bool, async_compile: bool = False) -> None:
    """Ours: enabled with an empty private cache and no executables in
    memory, so the cold pass really compiles; otherwise disabled, so the
    next tf.function optimized stays stock."""
    import blade_disc_tf as disc

    if not ours:
        disc.disable()
        return
    global _CACHE_ROOT
    if _CACHE_ROOT is None:
        _CACHE_ROOT = tempfile.TemporaryDirectory(prefix="disc_bench_cache_")
    # The self-guard off: modes of ours time our code (bert_dynamic.py's
    # *_guarded modes turn it on per call).
    disc.enable(cache_dir=tempfile.mkdtemp(dir=_CACHE_ROOT.name), async_compile=async_compile,
                self_guard=False)
    disc.clear_executable_cache()
    disc.reset_stats()


def disc_stats_clusters() -> List[dict]:
    import blade_disc_tf as disc

    return list(disc.stats()["clusters"].values())


def disc_compiles() -> int:
    return sum(c["compiles"] for c in disc_stats_clusters())


def disc_fallbacks() -> Dict[str, int]:
    import blade_disc_tf as disc

    reasons: Dict[str, int] = {}
    for c in disc.stats()["clusters"].values():
        for reason, n in c["fallback_reasons"].items():
            reasons[reason] = reasons.get(reason, 0) + n
    return reasons


def wait_for_async_compiles(timeout_s: float = 900.0) -> None:
    """Blocks until no compile is in flight (disc.wait_for_compiles), so that
    the steady passes of the async mode measure the executables."""
    import blade_disc_tf as disc

    if not disc.wait_for_compiles(timeout_s):
        raise TimeoutError("async compiles did not finish")


def first_call_launches(fn: Callable[..., object], request: Request) -> Tuple[int, object]:
    """fn's first call: (DiscLaunch ops in the graphs TF executed, its output)."""
    out = []
    graphs = coverage.executed_graphs(lambda: out.append(fn(*request)))
    return coverage.disc_launch_count(graphs), out[0]


class Timeline:
    """Per-request latencies of one mode: the cold pass and the steady ones."""

    def __init__(self, name: str, clock: Callable[[], float] = time.perf_counter) -> None:
        """clock: of the steady timings: wall time, or time.process_time (the
        process's CPU time, all threads: less of a shared machine's other load)."""
        self.name = name
        self.clock = clock
        self.cold_s = 0.0
        self.steady_totals: List[float] = []
        self.latencies: List[float] = []
        self.per_request: Dict[int, List[float]] = {}  # request index -> steady samples

    def run_pass(self, fn: Callable[..., object], requests: List[Request], cold: bool,
                 first: Optional[Callable[[], object]] = None) -> List[np.ndarray]:
        """One pass over `requests`; `first`, when given, replaces the call
        on the first request (e.g. one recorded for graph inspection)."""
        outputs, total = [], 0.0
        for i, request in enumerate(requests):
            start = time.perf_counter()
            out = first() if first is not None and i == 0 else fn(*request)
            out = out.numpy() if hasattr(out, "numpy") else np.asarray(out)
            elapsed = time.perf_counter() - start
            total += elapsed
            outputs.append(out)
            if not cold:
                self.latencies.append(elapsed)
        if cold:
            self.cold_s = total
        else:
            self.steady_totals.append(total)
        return outputs

    def time_request(self, index: int, fn: Callable[..., object], request: Request) -> None:
        """One steady call on request `index`; callers interleave the modes
        per request so that load drift hits every mode alike.  Timed with
        self.clock."""
        start = self.clock()
        out = fn(*request)
        if hasattr(out, "numpy"):
            out.numpy()
        elapsed = self.clock() - start
        self.per_request.setdefault(index, []).append(elapsed)
        self.latencies.append(elapsed)

    @property
    def steady_s(self) -> float:
        """Sum over requests of each request's median (per-request timing),
        else the median pass total."""
        if self.per_request:
            return sum(statistics.median(v) for v in self.per_request.values())
        return statistics.median(self.steady_totals) if self.steady_totals else float("nan")


def max_diff(got: List[np.ndarray], want: List[np.ndarray]) -> float:
    return max(float(np.max(np.abs(g - w), initial=0.0)) for g, w in zip(got, want))


def ratio(a: float, b: Optional[float]) -> str:
    return f"{a / b:.2f}x" if b else "-"
