"""Keras RNNs (Embedding -> LSTM or GRU -> Dense) on dynamic batch/sequence
requests: stock TF tf.function vs blade_disc_tf (the While loop, its
TensorLists and the layers around it compiled as one cluster), both in this
process on fresh tf.functions of the same Keras model.  Cold = the first
pass over the requests (tracing and compiling included, ours from an empty
cache: `ours` compiles synchronously, `ours_async` runs calls in TF until
the executable is ready); steady = median over --repeats passes, the modes
interleaved; ratio = stock / ours.  Coverage counts compute ops inside
DiscLaunch, the loop's cond and body included.  --train times a training
step instead: the loss and its gradients for every weight (GradientTape;
the backward loop while_v2 builds), without the optimizer's update.

    python benchmarks/keras_rnn.py [--units 128] [--requests 6] [--repeats 7] [--train]
"""
from __future__ import annotations

import argparse
import glob
import os
import statistics
import tempfile
import time
from typing import Callable, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import modes  # noqa: E402
from platform_info import cpu_summary  # noqa: E402
from models import coverage  # noqa: E402
from timing import interleaved_medians, print_table  # noqa: E402

# compiler/frontend/functions.py NESTED_FUNCTIONS_ATTR
NESTED_ATTR = "_disc_nested_functions"


def make_model(cell: str, vocab: int, embed: int, units: int):
    """Embedding -> RNN -> Dense(16); "stacked": Bidirectional(LSTM) returning
    sequences, then a GRU (three loops, TensorLists written every step)."""
    import keras
    keras.utils.set_random_seed(0)
    if cell == "stacked":
        rnn = [keras.layers.Bidirectional(keras.layers.LSTM(units, return_sequences=True)),
               keras.layers.GRU(units)]
    else:
        rnn = [{"lstm": keras.layers.LSTM, "gru": keras.layers.GRU}[cell](units)]
    return keras.Sequential([keras.layers.Input((None,), dtype="int32"),
                             keras.layers.Embedding(vocab, embed), *rnn,
                             keras.layers.Dense(16)])


def requests(n: int, vocab: int, seed: int = 0) -> List[np.ndarray]:
    """n distinct (batch 1-8, seq 5-128) requests, seq 1 among them."""
    rng = np.random.default_rng(seed)
    shapes = [(1, 1)]
    while len(shapes) < n:
        shape = (int(rng.integers(1, 9)), int(rng.integers(5, 129)))
        if shape not in shapes:
            shapes.append(shape)
    return [rng.integers(0, vocab, s).astype(np.int32) for s in shapes]


def _pass(fn: Callable, reqs: List[np.ndarray]) -> List[np.ndarray]:
    return [fn(x).numpy() for x in reqs]


def _fresh(model) -> Callable:
    return tf.function(lambda x: model(x, training=False),
                       input_signature=[tf.TensorSpec([None, None], tf.int32)])


def _fresh_train(model) -> Callable:
    """A training step: the loss and its gradients, flattened into one
    vector (one output to compare and time)."""
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        return tf.concat([tf.reshape(loss, [1])] + [tf.reshape(tf.convert_to_tensor(g), [-1])
                                                    for g in grads], 0)

    return tf.function(step, input_signature=[tf.TensorSpec([None, None], tf.int32)])


def _cluster_ops(dump_dir: str) -> dict:
    """Cluster function -> its compute ops, those of the cond and body
    functions it carries for its loops (NESTED_ATTR) included."""
    from google.protobuf import text_format
    from tensorflow.core.framework import function_pb2, graph_pb2

    out: dict = {}
    for path in glob.glob(os.path.join(dump_dir, "grappler", "*_after.pbtxt")):
        graph = graph_pb2.GraphDef()
        with open(path) as f:
            text_format.Parse(f.read(), graph)
        for fdef in graph.library.function:
            fns = [fdef] + [function_pb2.FunctionDef.FromString(b)
                            for b in (fdef.attr[NESTED_ATTR].list.s
                                      if NESTED_ATTR in fdef.attr else [])]
            out[fdef.signature.name] = [n.op for f in fns for n in f.node_def
                                        if n.op not in coverage.NOT_COMPUTE]
    return out


def loop_coverage(call: Callable[[], object]) -> coverage.Coverage:
    """What coverage.measure counts, the loops' cond and body ops inside
    the cluster counted too (they run in the executable)."""
    import blade_disc_tf as disc

    previous = disc.options().dump_dir
    with tempfile.TemporaryDirectory(prefix="disc_rnn_coverage_") as dump_dir:
        disc.set_options(dump_dir=dump_dir)
        try:
            graphs = coverage.executed_graphs(call)
        finally:
            disc.set_options(dump_dir=previous)
        ops = _cluster_ops(dump_dir)
    cov = coverage.Coverage()
    for graph in graphs:
        for node in graph.node:
            if node.op == "DiscLaunch":
                cov.launches.append(node.attr["f"].func.name)
                cov.inside.update(ops[node.attr["f"].func.name])
            elif node.op not in coverage.NOT_COMPUTE:
                cov.outside[node.op] += 1
    return cov


def coverage_columns(cov: coverage.Coverage) -> dict:
    """A row's coverage, launches and left_in_tf columns."""
    left = ",".join(f"{op}:{n}" for op, n in cov.outside.most_common()) or "none"
    return {"coverage": f"{100 * cov.share:.1f}%", "launches": len(cov.launches),
            "left_in_tf": left}


def stock_ops(fn: Callable, x) -> int:
    """Compute ops stock TF runs for one call (post-optimization graphs,
    the lowered loop's frame ops included)."""
    graphs = coverage.executed_graphs(lambda: fn(x))
    return sum(n.op not in coverage.NOT_COMPUTE for g in graphs for n in g.node)


def cold_and_steady(label: str, fresh: Callable[[], Callable],
                    run_pass: Callable[[Callable], List[np.ndarray]], repeats: int) -> dict:
    """One model's row: cold passes of stock TF (fresh(), disabled), ours
    compiling synchronously and ours_async, each checked against stock TF's
    outputs; then steady passes of TF and ours interleaved (medians)."""
    modes.configure_disc(False)
    tf_fn = fresh()
    start = time.perf_counter()
    want = run_pass(tf_fn)
    cold_tf = time.perf_counter() - start
    row = {"model": label, "cold_tf_s": cold_tf}
    for name, async_compile in (("ours", False), ("ours_async", True)):
        modes.configure_disc(True, async_compile=async_compile)
        start = time.perf_counter()
        got = run_pass(fresh())
        row[f"cold_{name}_s"] = time.perf_counter() - start
        row[f"cold_tf/{name}"] = cold_tf / row[f"cold_{name}_s"]
        err = max(float(np.max(np.abs(g - w))) if g.size else 0.0 for g, w in zip(got, want))
        assert err < 1e-3, f"{label} {name}: max abs error {err}"
        if name == "ours":
            row["compiles"] = modes.disc_compiles()
            row["fallbacks"] = sum(modes.disc_fallbacks().values())
            row["max_abs_err"] = err
    modes.wait_for_async_compiles()
    modes.configure_disc(True)  # steady state: synchronous, executables in memory
    ours_fn = fresh()
    run_pass(ours_fn)
    steady = interleaved_medians({"tf": lambda: run_pass(tf_fn),
                                  "ours": lambda: run_pass(ours_fn)}, repeats)
    row["steady_tf_ms"] = 1e3 * steady["tf"]
    row["steady_ours_ms"] = 1e3 * steady["ours"]
    row["steady_tf/ours"] = steady["tf"] / steady["ours"]
    return row


def bench(cell: str, args) -> dict:
    model = make_model(cell, args.vocab, args.embed, args.units)
    reqs = requests(args.requests, args.vocab)
    fresh = _fresh_train if args.train else _fresh
    modes.configure_disc(False)
    stock_compute_ops = stock_ops(fresh(model), reqs[0])
    row = cold_and_steady(cell + (" train" if args.train else ""), lambda: fresh(model),
                          lambda fn: _pass(fn, reqs), args.repeats)
    modes.configure_disc(True)
    row["stock_tf_ops"] = stock_compute_ops
    row.update(coverage_columns(loop_coverage(lambda: fresh(model)(reqs[0]))))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="lstm,gru,stacked")
    parser.add_argument("--vocab", type=int, default=1000)
    parser.add_argument("--embed", type=int, default=64)
    parser.add_argument("--units", type=int, default=128)
    parser.add_argument("--requests", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--train", action="store_true",
                        help="time a training step (loss and gradients)")
    args = parser.parse_args()
    print(f"CPU: {cpu_summary()}; TF {tf.__version__}")
    rows = [bench(cell, args) for cell in args.models.split(",")]
    print_table(f"Keras Embedding({args.vocab},{args.embed}) -> RNN({args.units}) -> Dense(16) "
                f"(stacked: BiLSTM -> GRU), "
                f"{args.requests} requests (batch 1-8, seq 1 and 5-128), seconds/ms per pass, "
                f"ratios stock/ours", rows)
    print("steady medians over", args.repeats, "interleaved passes;",
          statistics.mean(r["steady_tf/ours"] for r in rows), "mean steady ratio")


if __name__ == "__main__":
    main()
