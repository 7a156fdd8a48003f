"""Timing helpers shared by the benchmarks: medians over repeats, ratios.

These machines are shared and noisy, so every benchmark runs the modes it
compares in one process, interleaved, and reports medians and ratios."""
from __future__ import annotations

import gc
import statistics
import time
from typing import Callable, Dict, List


def time_calls(fn: Callable[[], object], repeats: int, inner: int = 1,
               clock: Callable[[], float] = time.perf_counter) -> List[float]:
    """Seconds per call, `repeats` samples of `inner` calls each (clock:
    wall time, or e.g. time.process_time for the process's CPU time).  The
    garbage collector is off while timing, as in timeit: a collection that
    lands in one mode's sample (11-15% of perf samples in conv_vs_tf.py) is
    noise, not that mode's cost."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        samples = []
        for _ in range(repeats):
            start = clock()
            for _ in range(inner):
                fn()
            samples.append((clock() - start) / inner)
        return samples
    finally:
        if was_enabled:
            gc.enable()


def interleaved_medians(modes: Dict[str, Callable[[], object]], repeats: int,
                        inner: int = 1,
                        clock: Callable[[], float] = time.perf_counter) -> Dict[str, float]:
    """Median seconds per call for each mode, sampling the modes in turn so
    that machine noise hits them alike."""
    samples: Dict[str, List[float]] = {name: [] for name in modes}
    for _ in range(repeats):
        for name, fn in modes.items():
            samples[name].extend(time_calls(fn, 1, inner, clock))
    return {name: statistics.median(values) for name, values in samples.items()}


def print_table(title: str, rows: List[Dict[str, object]]) -> None:
    """A plain fixed-width table."""
    print(f"\n{title}")
    if not rows:
        return
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(_fmt(r[c])) for r in rows)) for c in cols}
    print("  ".join(c.ljust(widths[c]) for c in cols))
    for row in rows:
        print("  ".join(_fmt(row[c]).ljust(widths[c]) for c in cols))


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)

