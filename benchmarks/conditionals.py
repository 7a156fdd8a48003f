"""Models with conditionals (tf.cond, tf.switch_case, a cond inside a while
body) on dynamic batch/sequence requests: stock TF tf.function vs
blade_disc_tf (the If/Case and the ops around it compiled as one cluster,
the taken branch chosen on the host at run time), both in this process on
fresh tf.functions of the same model.  Cold = the first pass over the
requests (tracing and compiling included, ours from an empty cache: `ours`
compiles synchronously, `ours_async` runs calls in TF until the executable
is ready); steady = median over --repeats passes, the modes interleaved;
ratio = stock / ours.  Coverage counts compute ops inside DiscLaunch, the
branch functions included.

    python benchmarks/conditionals.py [--models gated,switch,loop] [--width 256] [--repeats 7]
"""
from __future__ import annotations

import argparse
import os
import statistics
from typing import Callable, Dict, List

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import modes  # noqa: E402
from keras_rnn import cold_and_steady, coverage_columns, loop_coverage  # noqa: E402
from platform_info import cpu_summary  # noqa: E402
from timing import print_table  # noqa: E402

Model = Callable[[tf.Tensor, tf.Tensor], tf.Tensor]


def _weights(width: int, n: int, seed: int) -> List[tf.Variable]:
    rng = np.random.default_rng(seed)
    return [tf.Variable((rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32))
            for _ in range(n)]


def _mlp(x: tf.Tensor, ws: List[tf.Variable], act: Callable) -> tf.Tensor:
    for w in ws:
        x = act(tf.matmul(x, w)) + x
    return x


def make_model(kind: str, width: int) -> Model:
    """gated: tf.cond on the request's mean picks one of two 2-layer MLPs;
    switch: tf.switch_case on an int selector picks one of three (an index
    out of range runs the last, TF's rule); loop: a 4-step while loop whose
    body picks, by the step's parity, a GELU or a tanh layer."""
    ws = _weights(width, 6, seed=1)

    def norm(x):
        mean, var = tf.nn.moments(x, axes=[-1], keepdims=True)
        return (x - mean) * tf.math.rsqrt(var + 1e-5)

    if kind == "gated":
        def model(x, sel):
            h = norm(x)
            return tf.cond(tf.reduce_mean(h * h) > 1.0, lambda: _mlp(h, ws[:2], tf.nn.gelu),
                           lambda: _mlp(h, ws[2:4], tf.nn.relu))
    elif kind == "switch":
        def model(x, sel):
            h = norm(x)
            return tf.switch_case(sel, [lambda: _mlp(h, ws[:2], tf.nn.gelu),
                                        lambda: _mlp(h, ws[2:4], tf.nn.relu),
                                        lambda: _mlp(h, ws[4:], tf.tanh)])
    elif kind == "loop":
        def model(x, sel):
            def body(i, h):
                h = tf.cond(i % 2 == 0, lambda: _mlp(h, ws[:1], tf.nn.gelu),
                            lambda: _mlp(h, ws[1:2], tf.tanh))
                return i + 1, norm(h)
            return tf.while_loop(lambda i, h: i < 4, body, (tf.constant(0), norm(x)))[1]
    else:
        raise ValueError(f"unknown model {kind!r}")
    return model


def requests(n: int, width: int, seed: int = 0) -> List[tuple]:
    """n distinct (batch 1-8, seq 1 and 5-128) requests with a selector 0-3."""
    rng = np.random.default_rng(seed)
    shapes = [(1, 1)]
    while len(shapes) < n:
        shape = (int(rng.integers(1, 9)), int(rng.integers(5, 129)))
        if shape not in shapes:
            shapes.append(shape)
    return [((rng.standard_normal((*s, width)) * rng.uniform(0.5, 1.5)).astype(np.float32),
             np.int32(i % 4)) for i, s in enumerate(shapes)]


def _fresh(model: Model, width: int) -> Callable:
    return tf.function(model, input_signature=[tf.TensorSpec([None, None, width], tf.float32),
                                               tf.TensorSpec([], tf.int32)])


def _pass(fn: Callable, reqs: List[tuple]) -> List[np.ndarray]:
    return [fn(x, s).numpy() for x, s in reqs]


def bench(kind: str, args) -> Dict[str, object]:
    model = make_model(kind, args.width)
    reqs = requests(args.requests, args.width)
    row = cold_and_steady(kind, lambda: _fresh(model, args.width), lambda fn: _pass(fn, reqs),
                          args.repeats)
    modes.configure_disc(True)
    x, sel = reqs[-1]
    row.update(coverage_columns(loop_coverage(lambda: _fresh(model, args.width)(x, sel))))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="gated,switch,loop")
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--requests", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"CPU: {cpu_summary()}; TF {tf.__version__}")
    rows = [bench(kind, args) for kind in args.models.split(",")]
    print_table(f"conditionals, width {args.width}, {args.requests} requests (batch 1-8, "
                f"seq 1 and 5-128), seconds/ms per pass, ratios stock/ours", rows)
    print("steady medians over", args.repeats, "interleaved passes;",
          f"{statistics.geometric_mean(r['steady_tf/ours'] for r in rows):.3g}",
          "geomean steady ratio (stock/ours)")


if __name__ == "__main__":
    main()
