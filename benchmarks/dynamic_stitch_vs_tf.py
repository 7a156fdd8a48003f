"""DynamicStitch with run-time indices versus stock TF.

Two cases per size: a permutation split in two and stitched back
(DynamicStitch), and the gradient of DynamicPartition (ParallelDynamicStitch
inside GradientTape's graph).  Ours are traced while blade_disc_tf is
enabled, stock TF's after it is disabled; both run in one process,
interleaved, medians; results are checked equal first.

    python benchmarks/dynamic_stitch_vs_tf.py [--repeats 9]
"""
import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from timing import interleaved_medians, print_table  # noqa: E402

SIZES = [(1000, 64), (100000, 64), (20000, 512), (200000, 8)]
STITCH_SIG = [tf.TensorSpec([None], tf.int32)] * 2 + [tf.TensorSpec([None, None])] * 2
GRAD_SIG = [tf.TensorSpec([None, None]), tf.TensorSpec([None], tf.int32)]


def stitch(i, j, x, y):
    return tf.dynamic_stitch([i, j], [x, y]) * 2.0 + 1.0


def partition_grad(x, parts):
    with tf.GradientTape() as tape:
        tape.watch(x)
        a, b, c = tf.dynamic_partition(tf.tanh(x), parts, 3)
        loss = tf.reduce_sum(a * 2.0) + tf.reduce_sum(b * b) + tf.reduce_sum(c)
    return tape.gradient(loss, x)


def make_cases(rng: np.random.Generator):
    """(name, python function, signature, inputs) per case."""
    cases = []
    for n, k in SIZES:
        perm = rng.permutation(n).astype(np.int32)
        i, j = perm[: n // 2], perm[n // 2:]
        inputs = (tf.constant(i), tf.constant(j),
                  tf.constant(rng.standard_normal((len(i), k)), tf.float32),
                  tf.constant(rng.standard_normal((len(j), k)), tf.float32))
        cases.append((f"stitch {n}x{k}", stitch, STITCH_SIG, inputs))
        inputs = (tf.constant(rng.standard_normal((n, k)), tf.float32),
                  tf.constant(rng.integers(0, 3, n).astype(np.int32)))
        cases.append((f"partition-grad {n}x{k}", partition_grad, GRAD_SIG, inputs))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    import blade_disc_tf as disc

    cases = make_cases(np.random.default_rng(0))
    disc.enable(min_cluster_size=1, self_guard=False, async_compile=False)
    ours = {fn: tf.function(fn, input_signature=sig) for _, fn, sig, _ in cases}
    for name, fn, _, inputs in cases:  # compiled (once per function) before timing
        ours[fn](*inputs)
    disc.disable()
    stock = {fn: tf.function(fn, input_signature=sig) for _, fn, sig, _ in cases}
    rows = []
    for name, fn, _, inputs in cases:
        np.testing.assert_allclose(ours[fn](*inputs).numpy(), stock[fn](*inputs).numpy(),
                                   rtol=1e-5, atol=1e-5)
        med = interleaved_medians({"tf": lambda: stock[fn](*inputs).numpy(),
                                   "ours": lambda: ours[fn](*inputs).numpy()}, args.repeats)
        rows.append({"case": name, "tf_ms": med["tf"] * 1e3, "ours_ms": med["ours"] * 1e3,
                     "ours/tf": med["ours"] / med["tf"]})
    print_table(f"DynamicStitch, medians of {args.repeats}", rows)
    clusters = disc.stats()["clusters"].values()
    print("compiles", [c["compiles"] for c in clusters],
          "fallbacks", sum(c["fallbacks"] for c in clusters))


if __name__ == "__main__":
    main()
