"""Reduction fusion versus stock TF (and XLA) on transformer-sized tensors.

LayerNorm (Keras 3 LayerNormalization, also after a residual add), scaled
and masked softmax and bias + GELU (tanh, erf)
on [B, S, 768] for S from 16 to 512.  Stock TF, XLA (jit_compile, warmed
up for every shape: steady state, compiles not counted) and blade_disc_tf
run in one process, interleaved; stock and XLA functions are traced before
disc.enable(), so Grappler never hands them to our optimizer.
`floor` is a stock tf.function of the same signature returning its input
(the per-call cost no compiled kernel removes): tf/floor bounds tf/disc.

    python benchmarks/fusion_micro.py [--batch 4] [--repeats 20] [--no-xla] [--threads N]
"""
import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from platform_info import cpu_summary  # noqa: E402
from timing import interleaved_medians, print_table  # noqa: E402

HIDDEN = 768


def make_cases():
    """name -> python function of (x, bias); one LayerNorm layer shared by
    every mode so all run the same weights."""
    ln = keras.layers.LayerNormalization(epsilon=1e-12)
    ln.build((None, None, HIDDEN))
    ln.gamma.assign(np.random.default_rng(1).standard_normal(HIDDEN).astype(np.float32))
    return {
        "layernorm": lambda x, b: ln(x),
        "residual+layernorm": lambda x, b: ln(x + b + x * 0.5),
        # attention-style: scale and additive mask (a lone Softmax op is a
        # one-node cluster, below min_cluster_size, and stays in TF)
        "scaled+masked softmax": lambda x, b: tf.nn.softmax(x * 0.125 + b),
        "bias+gelu_tanh": lambda x, b: tf.nn.gelu(x + b, approximate=True),
        "bias+gelu_erf": lambda x, b: tf.nn.gelu(x + b, approximate=False),
    }


def make_function(fn, jit=False):
    spec = [tf.TensorSpec([None, None, HIDDEN], tf.float32), tf.TensorSpec([HIDDEN], tf.float32)]
    return tf.function(fn, input_signature=spec, jit_compile=jit or None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--seq", type=int, nargs="*", default=[16, 64, 128, 256, 512])
    parser.add_argument("--cases", nargs="*", default=None)
    parser.add_argument("--no-xla", action="store_true")
    parser.add_argument("--threads", type=int, default=0,
                        help="TF intra-op threads (0: TF's default); ours run on the same pool")
    args = parser.parse_args()
    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    rng = np.random.default_rng(0)
    cases = make_cases()
    names = args.cases or list(cases)
    b = tf.constant(rng.standard_normal(HIDDEN).astype(np.float32))
    inputs = {s: (tf.constant(rng.standard_normal((args.batch, s, HIDDEN)).astype(np.float32)), b)
              for s in args.seq}

    modes = {"tf": {n: make_function(cases[n]) for n in names}}
    floor = make_function(lambda x, b: tf.identity(x))
    modes["floor"] = {n: floor for n in names}
    if not args.no_xla:
        modes["xla"] = {n: make_function(cases[n], jit=True) for n in names}
    for fns in modes.values():        # traced (and XLA-compiled) before disc is enabled
        for f in fns.values():
            for xs in inputs.values():
                f(*xs)

    import blade_disc_tf as disc
    disc.enable(self_guard=False, async_compile=False)  # steady state: compiled before timing
    modes["disc"] = {n: make_function(cases[n]) for n in names}
    for n in names:
        for xs in inputs.values():
            np.testing.assert_allclose(modes["disc"][n](*xs).numpy(), modes["tf"][n](*xs).numpy(),
                                       rtol=2e-5, atol=2e-5)

    print(f"CPU: {cpu_summary()}")
    print_table("per-call median, one process, interleaved (ratios > 1: blade_disc_tf faster)",
                measure_rows(modes, names, inputs, args.batch, args.repeats))
    print_clusters(disc)


def measure_rows(modes: dict, names: list, inputs: dict, batch: int, repeats: int) -> list:
    """One table row per (case, sequence length): median us per mode and
    the ratios of the other modes to "disc" (modes: mode -> case -> fn)."""
    rows = []
    for n in names:
        for s, xs in inputs.items():
            inner = max(1, min(50, int(2e6 // (batch * s * HIDDEN))))
            med = interleaved_medians({m: (lambda f=fns[n]: f(*xs)) for m, fns in modes.items()},
                                      repeats, inner)
            row = {"case": n, "shape": f"{batch}x{s}x{HIDDEN}"}
            row.update({f"{m}_us": med[m] * 1e6 for m in modes})
            row.update({f"{m}/disc": med[m] / med["disc"] for m in modes
                        if m not in ("disc", "floor")})
            if "floor" in med:
                row["tf/floor"] = med["tf"] / med["floor"]
            rows.append(row)
    return rows


def print_clusters(disc) -> None:
    stats = disc.stats()["clusters"]
    print("\nclusters:", {k: {c: v[c] for c in ("compiles", "fallbacks")} for k, v in stats.items()})

if __name__ == "__main__":
    main()
