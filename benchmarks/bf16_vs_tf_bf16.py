"""Our bf16 fast math beside stock TF's own bf16 modes on one workload:
  B    the BERT encoder of models/transformer.py on workload B of
       bert_dynamic.py (40 seeded requests, batch 1-8, seq 16-256)
  C    the same encoder on workload C (16 requests, batch 1, seq 8-64)
  cnn  the ResNet-50-like CNN of cnn_dynamic.py (12 requests, batch 1/2/4,
       images 64-160 pixels a side)
Modes:

  tf_fp32       stock TF, float32
  tf_amp_bf16   stock TF, Grappler auto mixed precision to bf16 on oneDNN
                (auto_mixed_precision_onednn_bfloat16; AMX where the CPU has it)
  tf_fpmath     stock TF, TF_SET_ONEDNN_FPMATH_MODE=BF16 (float32 tensors,
                bf16 math inside the oneDNN primitives that honour it)
  ours_fp32     blade_disc_tf
  ours_bf16     blade_disc_tf with fast_math="bf16"

TF's options are process-wide (and TF re-instantiates functions when they
change), so each mode runs in its own process, one after another, each
with a cold pass and --repeats steady passes; steady = the sum over
requests of each request's median.  Errors: max |out - tf_fp32| / max
|tf_fp32| over every request's output.  The CPU (model name and the flags
that matter) and which bf16 kernel path ours ran are printed first.

    python benchmarks/bf16_vs_tf_bf16.py [--workload B|C|cnn] [--layers 4]
        [--repeats 3] [--quick] [--modes tf_fp32 tf_amp_bf16 ...]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Callable, Dict, List, Tuple

from machine import cpu_line

MODES = ("tf_fp32", "tf_amp_bf16", "tf_fpmath", "ours_fp32", "ours_bf16")
WORKLOADS = ("B", "C", "cnn")
FLAGS = ("avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "avx512_fp16")


def model_and_requests(workload: str, layers: int, quick: bool) -> Tuple[Callable, list]:
    """The workload's tf.function and its requests (tuples of arguments)."""
    import numpy as np
    import tensorflow as tf

    if workload == "cnn":
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                        "examples"))
        from cnn_dynamic_common import build_model, shapes

        import keras

        keras.utils.set_random_seed(0)  # the same weights in every mode's process
        blocks = (1, 1, 1, 1) if quick else (3, 4, 6, 3)
        sizes = (32, 48) if quick else (64, 96, 128, 160)
        rng = np.random.default_rng(0)
        requests = [(rng.uniform(-1, 1, (n, h, w, 3)).astype(np.float32),)
                    for n, h, w in shapes(4 if quick else 12, (1, 2, 4), sizes)]
        return build_model("resnet50_like", blocks)(), requests
    from bert_dynamic import workload as bert_requests
    from models.transformer import Config, make_weights, signature_ids, transformer

    config = (Config(hidden=64, heads=4, ffn=256, layers=1, vocab=1000) if quick
              else Config(layers=layers))
    weights = make_weights(config)
    fn = tf.function(lambda ids, mask: transformer(ids, mask, weights, config),
                     input_signature=signature_ids())
    return fn, bert_requests(workload, config.vocab, quick)


def run_mode(mode: str, workload: str, layers: int, repeats: int, quick: bool,
             out: str) -> None:
    """In this (child) process: mode's cold pass and steady passes; outputs
    and timings to `out` (.npz)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    import modes

    if mode == "tf_amp_bf16":
        tf.config.optimizer.set_experimental_options(
            {"auto_mixed_precision_onednn_bfloat16": True})
    info: Dict[str, object] = {}
    if mode.startswith("ours"):
        import blade_disc_tf as disc

        modes.configure_disc(True)
        disc.set_options(fast_math="bf16" if mode == "ours_bf16" else "")
        info["cpu"] = disc.stats()["cpu"]
    fn, requests = model_and_requests(workload, layers, quick)
    timeline = modes.Timeline(mode)
    outputs = timeline.run_pass(fn, requests, cold=True)
    for _ in range(repeats):
        timeline.run_pass(fn, requests, cold=False)
    if mode.startswith("ours"):
        import blade_disc_tf as disc

        info["fallbacks"] = modes.disc_fallbacks()
        info["bf16_keys"] = sum(k.endswith("|fast_math=bf16")
                                for c in disc.stats()["clusters"].values() for k in c["keys"])
    np.savez(out, *outputs, cold_s=timeline.cold_s, steady_s=timeline.steady_s,
             p50_ms=1e3 * modes.percentile(timeline.latencies, 50), info=json.dumps(info))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", choices=WORKLOADS, default="B")
    parser.add_argument("--layers", type=int, default=4, help="BERT layers (B, C)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="tiny model (smoke run)")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_mode(args.child, args.workload, args.layers, args.repeats, args.quick, args.out)
        return 0
    import numpy as np

    from timing import print_table

    print(cpu_line(FLAGS))
    results: Dict[str, dict] = {}
    here = os.path.dirname(os.path.abspath(__file__))
    modes_run: List[str] = ["tf_fp32"] + [m for m in args.modes if m != "tf_fp32"]
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes_run:
            out = os.path.join(tmp, mode + ".npz")
            env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
                       DISC_CACHE_DIR=os.path.join(tmp, "cache_" + mode))
            if mode == "tf_fpmath":
                env["TF_SET_ONEDNN_FPMATH_MODE"] = "BF16"
            cmd = [sys.executable, os.path.join(here, "bf16_vs_tf_bf16.py"), "--child", mode,
                   "--out", out, "--workload", args.workload, "--layers", str(args.layers),
                   "--repeats", str(args.repeats)]
            proc = subprocess.run(cmd + (["--quick"] if args.quick else []), env=env,
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                print(f"{mode} failed:\n{proc.stderr[-3000:]}")
                return 1
            with np.load(out) as z:
                results[mode] = {"outputs": [z[f"arr_{i}"] for i in range(len(z.files) - 4)],
                                 "cold_s": float(z["cold_s"]), "steady_s": float(z["steady_s"]),
                                 "p50_ms": float(z["p50_ms"]), "info": json.loads(str(z["info"]))}
    base = results["tf_fp32"]
    scale = max(float(np.abs(w).max()) for w in base["outputs"])
    rows = []
    for mode in modes_run:
        r = results[mode]
        err = max(float(np.abs(g - w).max()) for g, w in zip(r["outputs"], base["outputs"]))
        rows.append({"mode": mode, "cold_s": r["cold_s"], "steady_s": r["steady_s"],
                     "p50_ms": r["p50_ms"],
                     "vs tf_fp32": f"{base['steady_s'] / r['steady_s']:.2f}x",
                     "max_rel_err_vs_fp32": f"{err / scale:.2e}"})
        if r["info"].get("fallbacks"):
            print(f"FALLBACKS to TF in {mode}: {r['info']['fallbacks']}")
    model = ("ResNet-50-like CNN" if args.workload == "cnn" else
             f"BERT ({args.layers if not args.quick else 1} layers), workload {args.workload}")
    print_table(f"{model}{' (quick)' if args.quick else ''}, each mode in its own process; "
                f"steady = sum of per-request medians of {args.repeats}", rows)
    if "ours_bf16" in results:
        info = results["ours_bf16"]["info"]
        print(f"ours_bf16: tier {info['cpu']['selected']}, bf16 kernel: {info['cpu']['bf16_gemm']}, "
              f"{info['bf16_keys']} cluster keys with fast_math=bf16")
        for other in ("tf_fp32", "tf_amp_bf16", "tf_fpmath"):
            if other in results:
                print(f"ours_bf16 vs {other}: "
                      f"{results[other]['steady_s'] / results['ours_bf16']['steady_s']:.2f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
