"""A TF1 legacy tf.while_loop (control flow v1: Enter/Merge/Switch/
NextIteration/Exit/LoopCond, as TF1 graphs and frozen models hold it) in a
TF1 Session: a recurrence h = tanh(h W + x U + b) over a run-time trip
count, with a tf.cond in the body.  Stock TF runs the frames op by op;
blade_disc_tf functionalizes the loop and compiles it whole into one
executable.  Cold = the session's first run (graph optimization and, for
ours, a synchronous compile from an empty cache); steady = median of
--repeats runs per trip count, the modes interleaved; ratio = stock / ours.

    python benchmarks/tf1_while.py [--batch 8] [--hidden 64] [--steps 1,16,128]
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import modes  # noqa: E402
from platform_info import cpu_summary  # noqa: E402
from timing import interleaved_medians, print_table  # noqa: E402


def build_graph(hidden: int, seed: int = 0):
    """(graph, x, n, out) under control flow v1."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
    u = (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
    graph = tf.Graph()
    tf.compat.v1.disable_control_flow_v2()
    try:
        with graph.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [None, hidden], name="x")
            n = tf.compat.v1.placeholder(tf.int32, [], name="n")
            xu = tf.matmul(x, u) + 0.1

            def body(i, h):
                z = tf.tanh(tf.matmul(h, w) + xu)
                h = tf.cond(tf.equal(i % 4, 3), lambda: z * 0.5, lambda: z + h * 0.25)
                return i + 1, h

            _, h = tf.while_loop(lambda i, h: i < n, body, [0, tf.zeros_like(x)])
            out = tf.identity(tf.reduce_sum(h, 1), name="out")
    finally:
        tf.compat.v1.enable_control_flow_v2()
    return graph, x, n, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--steps", default="1,16,128")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    steps = [int(s) for s in args.steps.split(",")]
    graph, x, n, out = build_graph(args.hidden)
    xv = np.random.default_rng(1).standard_normal((args.batch, args.hidden)).astype(np.float32)
    print(f"CPU: {cpu_summary()}; TF {tf.__version__}")
    sessions, rows, want = {}, [], {}
    for name, ours in (("tf", False), ("ours", True)):
        modes.configure_disc(ours)
        session = tf.compat.v1.Session(graph=graph)
        start = time.perf_counter()
        first = session.run(out, {x: xv, n: steps[0]})
        cold = time.perf_counter() - start
        for s in steps:  # every trip count before timing: equal to stock TF
            got = first if s == steps[0] else session.run(out, {x: xv, n: s})
            want.setdefault(s, got)
            np.testing.assert_allclose(got, want[s], rtol=1e-4, atol=1e-4,
                                       err_msg=f"{name}, {s} steps: differs from stock TF")
        sessions[name] = session
        rows.append({"mode": name, "cold_s": cold,
                     "compiles": modes.disc_compiles() if ours else 0})
    for s in steps:
        steady = interleaved_medians(
            {m: (lambda se=se, s=s: se.run(out, {x: xv, n: s})) for m, se in sessions.items()},
            args.repeats)
        for row in rows:
            row[f"steady_ms@{s}"] = 1e3 * steady[row["mode"]]
            row[f"tf/this@{s}"] = steady["tf"] / steady[row["mode"]]
    for row in rows:
        row["cold_tf/this"] = rows[0]["cold_s"] / row["cold_s"]
    if modes.disc_fallbacks():
        raise SystemExit(f"fallbacks ran: {modes.disc_fallbacks()}")
    for session in sessions.values():
        session.close()
    print_table(f"TF1 legacy tf.while_loop (h = tanh(h W + x U + b), a tf.cond per step) in a "
                f"Session: batch {args.batch}, hidden {args.hidden}; results equal to stock TF's",
                rows)


if __name__ == "__main__":
    main()
