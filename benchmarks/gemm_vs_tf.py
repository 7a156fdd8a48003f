"""blade_disc_tf's GEMM (rt->gemm: skinny register-tiled kernel for m <= 128,
else Eigen, AVX-512 build, on TF's intra-op pool) versus stock TF's
MatMul/BatchMatMulV2 (oneDNN) at BERT-base shapes, plus GEMM epilogues
(bias + GELU, bias + residual run on C's tiles inside the GEMM).

Modes, all in one process and interleaved (medians): tf = stock TF, traced
and optimized before blade_disc_tf is enabled; disc = ours (the single op or
the GEMM + epilogue clustered, min_cluster_size=1); disc_eigen = ours with
kernel policy skinny_gemm="off" (Eigen for skinny products too); disc_unfused
= ours with gemm_epilogue_fusion=False (the epilogue as a second pass over C).

    python benchmarks/gemm_vs_tf.py [--repeats 15] [--tokens 1024] [--batch 8]
    python benchmarks/gemm_vs_tf.py --tokens 36 --batch 1   # batch-1 request
    python benchmarks/gemm_vs_tf.py --shapes bert-b --repeats 5   # workload B's shapes
    python benchmarks/gemm_vs_tf.py --shapes bert-b --kinds scores,context   # attention only

--shapes bert-b times every distinct GEMM of benchmarks/bert_dynamic.py's
workload B (its (batch, seq) requests: projections, FFN, attention scores and
context, the LM head), per shape, and a time-weighted aggregate (each shape's
median times its number of calls per workload pass).  The weights' B (projections,
FFN, LM head) is a captured tf.Variable, as in the model, which ours packs
once; per_call = ours with kernel policy prepack_weights=False (B packed on
every call); eigen = ours with packed_gemm="off" (Eigen's gebp instead of the
packed AVX-512 kernel).
"""
import argparse
import collections
import os
import time
from typing import Callable, Dict, List, Tuple

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from timing import interleaved_medians, print_table  # noqa: E402


def cases(tokens: int, batch: int):
    """(name, fn, A's shape, B's shape): the model's GEMMs (also used by
    benchmarks/bf16_fast_math.py)."""
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


def epilogue_cases(tokens: int):
    """(name, fn, input shapes): GEMMs whose bias/activation/residual run as
    the GEMM's epilogue."""
    gelu = lambda a, b, bias: tf.nn.gelu(tf.matmul(a, b) + bias, approximate=True)  # noqa: E731
    resid = lambda a, b, bias, r: tf.matmul(a, b) + bias + r  # noqa: E731
    return [
        ("ffn up+bias+gelu (epilogue)", gelu, [(tokens, 768), (768, 3072), (3072,)]),
        ("out proj+bias+residual (epilogue)", resid,
         [(tokens, 768), (768, 768), (768,), (tokens, 768)]),
    ]


def workload_shapes(name: str, layers: int = 4) -> Dict[Tuple[str, tuple, tuple], int]:
    """{(kind, A's shape, B's shape): calls per pass} for bert_dynamic.py's
    workload `name`: per layer three [T,768]x[768,768] projections plus the
    output one, FFN up and down, attention scores and context; one LM head
    ([B,768]x[vocab,768]^T) per request."""
    from bert_dynamic import workload
    from models.transformer import Config

    config = Config(layers=layers)
    h, f, heads = config.hidden, config.ffn, config.heads
    d = h // heads
    counts: Dict[Tuple[str, tuple, tuple], int] = collections.Counter()
    for ids, _ in workload(name, config.vocab, quick=False):
        b, s = ids.shape
        t = b * s
        counts[("proj", (t, h), (h, h))] += 4 * layers
        counts[("ffn_up", (t, h), (h, f))] += layers
        counts[("ffn_down", (t, f), (f, h))] += layers
        counts[("scores", (b, heads, s, d), (b, heads, s, d))] += layers
        counts[("context", (b, heads, s, s), (b, heads, s, d))] += layers
        counts[("lm_head", (b, h), (config.vocab, h))] += 1
    return counts


KIND_FNS: Dict[str, Callable] = {
    "proj": lambda a, b: tf.matmul(a, b), "ffn_up": lambda a, b: tf.matmul(a, b),
    "ffn_down": lambda a, b: tf.matmul(a, b), "context": lambda a, b: tf.matmul(a, b),
    "scores": lambda a, b: tf.matmul(a, b, transpose_b=True),
    "lm_head": lambda a, b: tf.matmul(a, b, transpose_b=True),
}


WEIGHT_KINDS = ("proj", "ffn_up", "ffn_down", "lm_head")  # B is a model weight


def _kind_fn(kind: str, rank: int, weight=None) -> Callable:
    """A fresh tf.function of `kind` over A and B, or over A alone with B the
    captured variable `weight` (read through ReadVariableOp, as in the model:
    ours packs it once)."""
    spec = tf.TensorSpec([None] * rank, tf.float32)
    if weight is None:
        return tf.function(KIND_FNS[kind], input_signature=[spec, spec])
    return tf.function(lambda a: KIND_FNS[kind](a, weight), input_signature=[spec])


def run_shapes(name: str, repeats: int, kinds: str = "") -> None:
    """Per-shape medians (tf; ours; ours with prepack_weights=False = B packed
    per call; ours with packed_gemm="off" = Eigen; interleaved) over
    workload `name`'s distinct GEMMs (only those of `kinds`, comma-separated,
    when given) and the time-weighted aggregate ratios per kind and overall."""
    counts = workload_shapes(name)
    if kinds:
        counts = {key: n for key, n in counts.items() if key[0] in kinds.split(",")}
    rng = np.random.default_rng(0)
    rank, weights = {}, {}
    for kind, sa, sb in counts:
        rank[kind] = len(sa)
        if kind in WEIGHT_KINDS:
            weights[kind] = tf.Variable(rng.standard_normal(sb).astype(np.float32))
    stock = {kind: _kind_fn(kind, r, weights.get(kind)) for kind, r in rank.items()}
    # traced and optimized before disc is enabled
    inputs = {}
    for key in counts:
        kind, sa, sb = key
        inputs[key] = [tf.constant(rng.standard_normal(s).astype(np.float32))
                       for s in ((sa,) if kind in weights else (sa, sb))]
        stock[kind](*inputs[key])

    import blade_disc_tf as disc
    disc.enable(min_cluster_size=1, self_guard=False, async_compile=False)
    ours = {kind: _kind_fn(kind, r, weights.get(kind)) for kind, r in rank.items()}
    modes = ("tf", "disc", "per_call", "eigen")
    rows: List[Dict[str, object]] = []
    totals: Dict[str, List[float]] = collections.defaultdict(lambda: [0.0] * len(modes))
    for key in sorted(counts, key=lambda k: (k[0], k[1])):
        kind, sa, sb = key
        xs = inputs[key]
        got, want = ours[kind](*xs).numpy(), stock[kind](*xs).numpy()
        err = float(np.abs(got - want).max() / max(1.0, np.abs(want).max()))
        flops = 2.0 * np.prod(got.shape) * sa[-1]
        inner = max(1, min(10, int(2e8 / flops)))
        med = interleaved_medians(
            {"tf": lambda: stock[kind](*xs), "disc": lambda: ours[kind](*xs),
             "per_call": disc.kernel_policy(prepack_weights=False)(lambda: ours[kind](*xs)),
             "eigen": disc.kernel_policy(packed_gemm="off")(lambda: ours[kind](*xs))},
            repeats, inner=inner)
        for agg in (kind, "ALL"):
            for i, mode in enumerate(modes):
                totals[agg][i] += counts[key] * med[mode]
        rows.append({"kind": kind, "A": "x".join(map(str, sa)), "B": "x".join(map(str, sb)),
                     "calls": counts[key], "tf_ms": med["tf"] * 1e3, "disc_ms": med["disc"] * 1e3,
                     "tf_GF/s": flops / med["tf"] / 1e9, "disc_GF/s": flops / med["disc"] / 1e9,
                     "disc/tf": med["disc"] / med["tf"],
                     "per_call/tf": med["per_call"] / med["tf"],
                     "eigen/tf": med["eigen"] / med["tf"], "max_rel_err": err})
        print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in rows[-1].items()), flush=True)
    print_table(f"workload {name} GEMM shapes, {repeats} repeats (medians; disc/tf = time ratio)",
                rows)
    agg_rows = [dict({"kind": k}, **{f"{m}_s/pass": v[i] for i, m in enumerate(modes)},
                     **{f"{m}/tf": v[i] / v[0] for i, m in enumerate(modes) if i})
                for k, v in sorted(totals.items())]
    print_table("time-weighted aggregate (sum of calls x median per workload pass)", agg_rows)
    print("\nweights packed once:", {k: disc.stats()[k] for k in ("fp32_weights", "bf16_weights")})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--tokens", type=int, default=1024, help="B*S")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--shapes", default="", help="bert-b / bert-c: the workload's GEMM shapes")
    parser.add_argument("--kinds", default="",
                        help="with --shapes: only these kinds (e.g. scores,context)")
    args = parser.parse_args()
    if args.shapes:
        return run_shapes(args.shapes.split("-")[-1].upper(), args.repeats, args.kinds)
    rng = np.random.default_rng(0)
    specs = []
    all_cases = [(name, fn, [sa, sb]) for name, fn, sa, sb in cases(args.tokens, args.batch)]
    for name, fn, shapes in all_cases + epilogue_cases(args.tokens):
        xs = [tf.constant(rng.standard_normal(s).astype(np.float32)) for s in shapes]
        sig = [tf.TensorSpec([None] * len(s), tf.float32) for s in shapes]
        stock = tf.function(fn, input_signature=sig)
        stock(*xs)  # optimized (and cached) before disc is enabled
        specs.append((name, fn, sig, xs, stock))

    import blade_disc_tf as disc
    disc.enable(min_cluster_size=1, self_guard=False, async_compile=False)
    rows = []
    for name, fn, sig, xs, stock in specs:
        ours = tf.function(fn, input_signature=sig)
        t0 = time.perf_counter()
        got = ours(*xs).numpy()
        first = time.perf_counter() - t0
        want = stock(*xs).numpy()
        err = float(np.abs(got - want).max() / max(1.0, np.abs(want).max()))
        flops = 2.0 * np.prod(got.shape) * xs[0].shape[-1]  # k: A's last dim
        modes = {"tf": lambda: stock(*xs), "disc": lambda: ours(*xs),
                 "disc_eigen": disc.kernel_policy(skinny_gemm="off")(lambda: ours(*xs))}
        if "epilogue" in name:
            modes["disc_unfused"] = disc.kernel_policy(gemm_epilogue_fusion=False)(
                lambda: ours(*xs))
        med = interleaved_medians(modes, args.repeats, inner=3)
        row = {"case": name, "tf_ms": med["tf"] * 1e3, "disc_ms": med["disc"] * 1e3,
               "tf_GF/s": flops / med["tf"] / 1e9, "disc_GF/s": flops / med["disc"] / 1e9,
               "disc/tf": med["disc"] / med["tf"],
               "eigen/tf": med["disc_eigen"] / med["tf"],
               "unfused/tf": med["disc_unfused"] / med["tf"] if "disc_unfused" in med else "-",
               "first_call_s": first, "max_rel_err": err}
        rows.append(row)
    print_table(f"GEMM medians, T=B*S={args.tokens}, B={args.batch}, {args.repeats} repeats "
                "(ratios: time over stock TF's time)", rows)
    stats = disc.stats()["clusters"]
    print("\nclusters:", {k[:40]: {c: v[c] for c in ("compiles", "fallbacks", "compile_seconds")}
                          for k, v in stats.items()})


if __name__ == "__main__":
    main()
