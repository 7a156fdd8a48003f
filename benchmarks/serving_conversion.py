"""SavedModel conversion: cost and payoff, per model of tests/serving.

For each model (Keras BERT-style encoder, Keras CNN, TF1 graph): conversion
time (cold compile cache), size of the SavedModel before and after, and in
fresh serving processes (only the op library loaded, compiler blocked; the
original runs in stock TF in the same process) load time and first-request
latency of the original vs the converted model: medians over --runs
processes (each first loads and runs the original once, untimed, so that
neither timed model pays TF's start-up), with ratios converted/original.

usage: python benchmarks/serving_conversion.py [--runs 5] [--models bert,cnn,tf1]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVING = os.path.join(ROOT, "tests", "serving")
sys.path.insert(0, SERVING)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import serving_models  # noqa: E402

MODELS = {"bert": (serving_models.save_bert, "tf2", "serving_default"),
          "cnn": (serving_models.save_cnn, "tf2", "serving_default"),
          "tf1": (serving_models.save_tf1, "tf1", "probs")}


def _size(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def _fresh(original: str, converted: str, fmt: str, signature: str, shapes: list) -> dict:
    cmd = [sys.executable, os.path.join(SERVING, "serving_check.py"), original, converted,
           fmt, signature, json.dumps(shapes[:1]), "--warm-up"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per model")
    parser.add_argument("--models", default="bert,cnn,tf1")
    args = parser.parse_args()
    import blade_disc_tf as disc

    work = tempfile.mkdtemp(prefix="disc_serving_bench_")
    print(f"{'model':6} {'convert s':>9} {'clusters':>8} {'size KB':>15} {'size x':>6} "
          f"{'load ms orig/conv':>18} {'load x':>6} {'1st req ms orig/conv':>21} {'1st x':>6}")
    for name in args.models.split(","):
        builder, fmt, signature = MODELS[name]
        src, dst = os.path.join(work, name), os.path.join(work, name + "_disc")
        shapes = builder(src)
        start = time.perf_counter()
        summary = disc.convert_saved_model(src, dst, cache_dir=os.path.join(work, "cache_" + name))
        convert_s = time.perf_counter() - start
        runs = [_fresh(src, dst, fmt, signature, shapes) for _ in range(args.runs)]
        assert all(r["compiles"] == 0 and not r["fallback_reasons"] for r in runs)

        def median(kind: str, which: str) -> float:
            return 1e3 * statistics.median(r["times"][which][kind] for r in runs)

        load = (median("load_s", "original"), median("load_s", "converted"))
        first = (median("first_request_s", "original"), median("first_request_s", "converted"))
        sizes = (_size(src) / 1024, _size(dst) / 1024)
        print(f"{name:6} {convert_s:9.1f} {summary.compiled:>3}/{len(summary.clusters):<4} "
              f"{sizes[0]:7.0f}/{sizes[1]:<7.0f} {sizes[1] / sizes[0]:6.2f} "
              f"{load[0]:8.0f}/{load[1]:<9.0f} {load[1] / load[0]:6.2f} "
              f"{first[0]:10.1f}/{first[1]:<10.1f} {first[1] / first[0]:6.2f}")
    print(f"(medians over {args.runs} fresh processes after an untimed warm-up; the original "
          "runs in stock TF, the converted model through its embedded executables)")


if __name__ == "__main__":
    main()
