"""Quickstart: a tf.function with dynamic shapes, compiled once by blade_disc_tf.

Twenty calls with twenty different shapes run through one executable: the
cluster is compiled for the rank signature (two dims of unknown size), never
for concrete sizes.  The compile runs in the background (async_compile, the
default): the first call runs in TensorFlow meanwhile, and
disc.wait_for_compiles() waits for it here so the other nineteen run
compiled.  Prints each cluster's counters and the largest difference from
stock TensorFlow (the same Python function run eagerly)."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import blade_disc_tf as disc  # noqa: E402

disc.enable()


@tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
def gated_activation(x):
    scale = tf.constant([[0.5]])              # broadcasts over both dims
    h = x * scale + 1.0
    gate = tf.sigmoid(h) * tf.tanh(x)
    return tf.where(gate > 0.0, gate, 0.1 * gate) + tf.exp(-h * h)


def main() -> None:
    rng = np.random.default_rng(0)
    shapes = [(1, 1), (0, 8), (8, 0)] + [
        (int(rng.integers(1, 64)), int(rng.integers(1, 512))) for _ in range(17)]
    worst = 0.0
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        got = gated_activation(x).numpy()
        disc.wait_for_compiles()  # returns at once when nothing compiles
        want = gated_activation.python_function(x).numpy()   # stock TF, op by op
        if got.size:
            worst = max(worst, float(np.max(np.abs(got - want))))
    print(f"ran {len(shapes)} shapes, largest difference from stock TF: {worst:.3g}")
    for name, c in disc.stats()["clusters"].items():
        print(f"cluster {name}: {c['compiles']} compile(s), {c['disk_cache_hits']} disk-cache hit(s), "
              f"{c['cache_hits']} cache hits, {c['fallbacks']} fallbacks "
              f"({c['fallback_reasons']}), {c['self_guard']['tf_runs']} run in TF by the "
              f"self-guard while it timed both, "
              f"compile {c['compile_seconds']:.2f}s")
    if not disc.stats()["clusters"]:
        raise SystemExit("no cluster ran: is the op library built?")


if __name__ == "__main__":
    main()
