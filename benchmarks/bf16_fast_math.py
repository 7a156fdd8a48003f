"""bf16 fast math (fast_math="bf16") against stock TF fp32 and our fp32 GEMMs:
the BERT encoder of models/transformer.py on workload B of bert_dynamic.py
(40 seeded requests, batch 1-8, seq 16-256; --workload picks another), then a GEMM micro table at
BERT-base shapes (those of gemm_vs_tf.py).

All three modes run in this process, interleaved per request (model) or per
repeat (GEMMs), in a rotating order; steady = the sum over requests of each
request's median.  The option is process-wide, so each call of ours sets it
first (one DiscSetOptions, microseconds); fast math is part of every cache
key, so the two modes of ours run different executables.  Errors: the model
output against stock TF fp32 (max |diff| / max |tf|), the GEMMs against
float64 per element scaled by sum |a||b| (the documented bound is
2^-7 + 2^-15 + k 2^-23 of it).  --ab NAME=VALUE adds a mode "ours_bf16_ab":
fast math with that kernel policy field set (README "Kernel policy"), so a
kernel change is A/B-timed in one process, e.g. --ab gemm_epilogue_fusion=false.

    python benchmarks/bf16_fast_math.py [--workload B] [--layers 4] [--repeats 5] [--quick]
        [--skip-model]
        [--ab NAME=VALUE]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import modes  # noqa: E402
from bert_dynamic import workload  # noqa: E402
from gemm_vs_tf import cases  # noqa: E402
from models.transformer import Config, make_weights, signature_ids, transformer  # noqa: E402
from timing import interleaved_medians, print_table  # noqa: E402

MODES = (("tf", False, ""), ("ours_fp32", True, ""), ("ours_bf16", True, "bf16"))


def with_fast_math(fn: Callable, mode: str, policy: Optional[Dict[str, Any]] = None) -> Callable:
    """fn called with the fast_math option set to `mode` (and the kernel
    policy fields, if any, set around the call), output as numpy."""
    import blade_disc_tf as disc

    def call(*args):
        disc.set_options(fast_math=mode)
        with disc.kernel_policy(**policy) if policy else contextlib.nullcontext():
            out = fn(*args)
            return out.numpy() if hasattr(out, "numpy") else np.asarray(out)
    return call


def build_modes(body: Callable, signature, requests: List, ab: Optional[Dict[str, Any]] = None,
                **disc_options):
    """One tf.function per mode, each run over `requests` right away (the
    cold pass: TF optimizes a function at its first call): stock TF while
    blade_disc_tf is disabled, ours after enabling it with a fresh cache.
    With `ab` (kernel policy fields), a fourth mode ours_bf16_ab: fast math with
    them set.  Returns (functions, cold-pass outputs, cold seconds, bf16 keys)."""
    import blade_disc_tf as disc

    fns, outputs, cold = {}, {}, {}
    for name, ours, mode in MODES + ((("ours_bf16_ab", True, "bf16"),) if ab else ()):
        if ours and not disc.is_enabled():
            modes.configure_disc(True)
            disc.set_options(**disc_options)
        elif not ours:
            modes.configure_disc(False)
        fns[name] = with_fast_math(tf.function(body, input_signature=signature), mode,
                                   ab if name.endswith("_ab") else None)
        start = time.perf_counter()
        outputs[name] = [fns[name](*r) for r in requests]
        cold[name] = time.perf_counter() - start
    fallbacks = modes.disc_fallbacks()
    if fallbacks:
        print(f"FALLBACKS to TF in ours: {fallbacks}")
    keys = [k for c in disc.stats()["clusters"].values() for k in c["keys"]]
    return fns, outputs, cold, sum(k.endswith("|fast_math=bf16") for k in keys)


def run_model(config: Config, workload_name: str, requests: List, repeats: int,
              ab: Optional[Dict[str, Any]] = None) -> None:
    weights = make_weights(config)

    def model(ids, mask):
        return transformer(ids, mask, weights, config)

    fns, outputs, cold, bf16_keys = build_modes(model, signature_ids(), requests, ab)
    print(f"model: {bf16_keys} cluster keys with fast_math=bf16")
    timelines = {name: modes.Timeline(name) for name in fns}
    names = list(fns)
    for rep in range(repeats):
        for i, request in enumerate(requests):
            shift = (i + rep) % len(names)
            for name in names[shift:] + names[:shift]:
                timelines[name].time_request(i, fns[name], request)
    want = outputs["tf"]
    scale = max(float(np.abs(w).max()) for w in want)
    rows = []
    for name in names:
        t = timelines[name]
        err = max(float(np.abs(g - w).max()) for g, w in zip(outputs[name], want)) / scale
        rows.append({"mode": name, "cold_s": cold[name], "steady_s": t.steady_s,
                     "p50_ms": 1e3 * modes.percentile(t.latencies, 50),
                     "tf/mode (speedup)": f"{timelines['tf'].steady_s / t.steady_s:.2f}x",
                     "max_rel_err_vs_tf": f"{err:.2e}"})
    print_table(f"BERT ({config.layers} layers, hidden {config.hidden}), workload {workload_name}: "
                f"{len(requests)} requests, steady = sum of per-request medians of {repeats}", rows)
    t = {n: timelines[n].steady_s for n in names}
    import blade_disc_tf as disc
    packed = disc.stats().get("bf16_weights", {"packs": 0, "bytes": 0})
    print(f"weights packed to bf16 once (Const/variable reads): {packed['packs']} packs, "
          f"{packed['bytes'] / 2**20:.1f} MiB held")
    print(f"bf16 vs stock TF fp32: {t['tf'] / t['ours_bf16']:.2f}x faster; "
          f"bf16 vs ours fp32: {t['ours_fp32'] / t['ours_bf16']:.2f}x; "
          f"ours fp32 vs stock TF: {t['tf'] / t['ours_fp32']:.2f}x")
    if ab:
        print(f"bf16 with {ab} vs stock TF fp32: {t['tf'] / t['ours_bf16_ab']:.2f}x; "
              f"bf16 vs bf16 with {ab}: {t['ours_bf16_ab'] / t['ours_bf16']:.3f}x")


def gemm_error(got: np.ndarray, fn: Callable, a: np.ndarray, b: np.ndarray) -> float:
    """max over C of |got - exact| / sum |a||b| (float64 reference)."""
    exact = fn(tf.constant(a, tf.float64), tf.constant(b, tf.float64)).numpy()
    mag = fn(tf.constant(np.abs(a), tf.float64), tf.constant(np.abs(b), tf.float64)).numpy()
    return float(np.max(np.abs(got - exact) / (mag + 1e-30)))


def run_gemms(tokens: int, batch: int, repeats: int) -> None:
    rng = np.random.default_rng(0)
    rows = []
    for name, fn, sa, sb in cases(tokens, batch):
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.standard_normal(sb).astype(np.float32)
        sig = [tf.TensorSpec([None] * len(sa), tf.float32), tf.TensorSpec([None] * len(sb), tf.float32)]
        fns, outs, _, bf16_keys = build_modes(fn, sig, [(a, b)], min_cluster_size=1)
        outs = {m: o[0] for m, o in outs.items()}
        med = interleaved_medians({m: (lambda f=f: f(a, b)) for m, f in fns.items()}, repeats, inner=3)
        flops = 2.0 * np.prod(outs["tf"].shape) * sa[-1]
        rows.append({"case": name, "tf_ms": 1e3 * med["tf"], "fp32_ms": 1e3 * med["ours_fp32"],
                     "bf16_ms": 1e3 * med["ours_bf16"],
                     "bf16_GF/s": flops / med["ours_bf16"] / 1e9,
                     "tf/bf16": f"{med['tf'] / med['ours_bf16']:.2f}x",
                     "fp32/bf16": f"{med['ours_fp32'] / med['ours_bf16']:.2f}x",
                     "err_fp32": f"{gemm_error(outs['ours_fp32'], fn, a, b):.1e}",
                     "err_bf16": f"{gemm_error(outs['ours_bf16'], fn, a, b):.1e}",
                     "bf16_keys": bf16_keys})
    print_table(f"GEMM medians of {repeats} interleaved repeats (x3 calls), T=B*S={tokens}, B={batch}; "
                "err = max |C - exact| / sum|a||b|", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", choices=("A", "B", "C"), default="B",
                        help="bert_dynamic.py's workload")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=1024, help="GEMM table: B*S")
    parser.add_argument("--quick", action="store_true", help="tiny model and workload (smoke run)")
    parser.add_argument("--skip-model", action="store_true", help="GEMM table only")
    parser.add_argument("--skip-gemms", action="store_true", help="model only")
    parser.add_argument("--ab", metavar="NAME=VALUE", action="append", default=[],
                        help="model: add fast math with this kernel policy field set "
                             "(e.g. gemm_epilogue_fusion=false)")
    args = parser.parse_args()
    config = (Config(hidden=64, heads=4, ffn=256, layers=1, vocab=1000) if args.quick
              else Config(layers=args.layers))
    repeats = 1 if args.quick else args.repeats
    from blade_disc_tf import _library
    from blade_disc_tf.kernel_policy import parse_kernel_policy_setting

    print(f"{os.cpu_count()} CPUs; avx512_bf16: "
          f"{any(' avx512_bf16' in line for line in open('/proc/cpuinfo') if line.startswith('flags'))}"
          f"; the bf16 kernel runs by default: {_library.load().stats()['cpu']['bf16_gemm']}")
    if not args.skip_model:
        ab = dict(parse_kernel_policy_setting(item) for item in args.ab)
        run_model(config, args.workload, workload(args.workload, config.vocab, args.quick),
                  repeats, ab)
    if not args.skip_gemms:
        run_gemms(128 if args.quick else args.tokens, 2 if args.quick else 8, repeats)


if __name__ == "__main__":
    sys.exit(main())
