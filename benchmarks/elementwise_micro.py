"""Fused elementwise kernels versus stock TF on transformer-sized tensors.

Bias + GELU (tanh and erf forms) and a sigmoid/tanh gate on [B, S, 768]
for S from 16 to 512.  Stock TF and blade_disc_tf run in one process,
interleaved; the stock functions are traced and called before
disc.enable(), so Grappler never hands them to our optimizer.

    python benchmarks/elementwise_micro.py [--batch 4] [--repeats 20]
"""
import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from fusion_micro import measure_rows, print_clusters  # noqa: E402
from timing import print_table  # noqa: E402

HIDDEN = 768


def gelu_tanh(x, b, g):
    return tf.nn.gelu(x + b, approximate=True)


def gelu_erf(x, b, g):
    return tf.nn.gelu(x + b, approximate=False)


def gate(x, b, g):
    return tf.sigmoid(g) * tf.tanh(x + b)


CASES = {"bias+gelu_tanh": gelu_tanh, "bias+gelu_erf": gelu_erf, "sigmoid*tanh gate": gate}


def make_function(fn):
    spec = tf.TensorSpec([None, None, HIDDEN], tf.float32)
    return tf.function(fn, input_signature=[spec, tf.TensorSpec([HIDDEN], tf.float32), spec])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--seq", type=int, nargs="*", default=[16, 64, 128, 256, 512])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    b = rng.standard_normal(HIDDEN).astype(np.float32)
    inputs = {s: (tf.constant(rng.standard_normal((args.batch, s, HIDDEN)).astype(np.float32)),
                  tf.constant(b),
                  tf.constant(rng.standard_normal((args.batch, s, HIDDEN)).astype(np.float32)))
              for s in args.seq}

    stock = {name: make_function(fn) for name, fn in CASES.items()}
    for f in stock.values():          # traced and optimized before disc is enabled
        for xs in inputs.values():
            f(*xs)

    import blade_disc_tf as disc
    disc.enable(self_guard=False, async_compile=False)  # steady state: compiled before timing
    ours = {name: make_function(fn) for name, fn in CASES.items()}
    for name in CASES:
        for xs in inputs.values():
            np.testing.assert_allclose(ours[name](*xs).numpy(), stock[name](*xs).numpy(),
                                       rtol=1e-5, atol=1e-5)

    print_table("per-call median, stock TF vs blade_disc_tf (one process, interleaved)",
                measure_rows({"tf": stock, "disc": ours}, list(CASES), inputs, args.batch,
                             args.repeats))
    print_clusters(disc)

if __name__ == "__main__":
    main()
