"""blade_disc_tf's GEMM (rt->gemm: Eigen, AVX-512 build, on TF's intra-op
pool) versus stock TF's MatMul/BatchMatMulV2 (oneDNN) at BERT-base shapes.

Both run the same tf.function body in one process, interleaved (medians):
stock TF is traced and optimized before blade_disc_tf is enabled; ours
clusters the single op (min_cluster_size=1) into a DiscLaunch.

    python benchmarks/gemm_vs_tf.py [--repeats 15] [--tokens 1024]
"""
import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from timing import interleaved_medians, print_table  # noqa: E402


def cases(tokens: int, batch: int):
    seq = tokens // batch
    mm = lambda a, b: tf.matmul(a, b)  # noqa: E731
    mm_t = lambda a, b: tf.matmul(a, b, transpose_b=True)  # noqa: E731
    return [
        ("qkv/out proj [T,768]x[768,768]", mm, (tokens, 768), (768, 768)),
        ("ffn up [T,768]x[768,3072]", mm, (tokens, 768), (768, 3072)),
        ("ffn down [T,3072]x[3072,768]", mm, (tokens, 3072), (3072, 768)),
        ("scores [B,12,S,64]x[B,12,S,64]^T", mm_t, (batch, 12, seq, 64), (batch, 12, seq, 64)),
        ("context [B,12,S,S]x[B,12,S,64]", mm, (batch, 12, seq, seq), (batch, 12, seq, 64)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--tokens", type=int, default=1024, help="B*S")
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    specs = []
    for name, fn, sa, sb in cases(args.tokens, args.batch):
        a = tf.constant(rng.standard_normal(sa).astype(np.float32))
        b = tf.constant(rng.standard_normal(sb).astype(np.float32))
        sig = [tf.TensorSpec([None] * len(sa), tf.float32), tf.TensorSpec([None] * len(sb), tf.float32)]
        stock = tf.function(fn, input_signature=sig)
        stock(a, b)  # optimized (and cached) before disc is enabled
        specs.append((name, fn, sig, a, b, stock))

    import blade_disc_tf as disc
    disc.enable(min_cluster_size=1)
    rows = []
    for name, fn, sig, a, b, stock in specs:
        ours = tf.function(fn, input_signature=sig)
        t0 = time.perf_counter()
        got = ours(a, b).numpy()
        first = time.perf_counter() - t0
        want = stock(a, b).numpy()
        err = float(np.abs(got - want).max() / max(1.0, np.abs(want).max()))
        flops = 2.0 * np.prod(got.shape) * (a.shape[-1] if "^T" in name or True else 0)
        med = interleaved_medians({"tf": lambda: stock(a, b), "disc": lambda: ours(a, b)},
                                  args.repeats, inner=3)
        rows.append({"case": name, "tf_ms": med["tf"] * 1e3, "disc_ms": med["disc"] * 1e3,
                     "tf_GF/s": flops / med["tf"] / 1e9, "disc_GF/s": flops / med["disc"] / 1e9,
                     "disc/tf time": med["disc"] / med["tf"], "first_call_s": first,
                     "max_rel_err": err})
    print_table(f"GEMM medians, T=B*S={args.tokens}, B={args.batch} (ratio < 1.10 is the goal)",
                rows)
    stats = disc.stats()["clusters"]
    print("\nclusters:", {k[:40]: {c: v[c] for c in ("compiles", "fallbacks", "compile_seconds")}
                          for k, v in stats.items()})


if __name__ == "__main__":
    main()
