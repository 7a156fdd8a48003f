"""A/B of the forward convolution kernels (runtime/cpu/conv_direct.cc) of two
source trees, without TF or a rebuilt libblade_disc_tf.so: each tree's
kernels are compiled into benchmarks/conv_kernel_driver.cc, and the two
binaries run in alternating processes (medians of their per-process
medians), so that a loaded machine's noise hits both alike.

    python benchmarks/conv_kernel_ab.py [--rev HEAD] [--rounds 8] [--threads 1]
        --layer "dw 8 14 576 3 1" --layer "conv 8 7 512 512 3 1"

A layer is "dw BATCH HW C K STRIDE" or "conv BATCH HW IN_C OUT_C K STRIDE"
(SAME padding, bias + Relu).  A is the git revision --rev (its
tf_disc/runtime), B the working tree; the checksums of A and B must agree.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List

import kernel_build

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# conv_depthwise.cc split from conv_direct.cc: older trees have only the latter.
SOURCES = ["tf_disc/runtime/cpu/conv_direct.cc", "tf_disc/runtime/cpu/conv_depthwise.cc",
           "tf_disc/runtime/cpu/kernel_policy.cc"]


def build(tree: str, out: str) -> None:
    """The driver linked with `tree`'s convolution kernels (with the flags of
    this machine's kernel library, kernel_build.py)."""
    sources = [s for s in SOURCES if os.path.exists(os.path.join(tree, s))]
    kernel_build.build_driver("conv_kernel_driver.cc", sources, out, tree)


def driver_args(layer: str, threads: int) -> List[str]:
    """The driver's arguments for a --layer string, with enough repeats for
    about 0.2 s of work."""
    kind, *dims = layer.split()
    if kind == "dw":
        batch, hw, c, k, s = map(int, dims)
        args, flops = [1, batch, hw, c, c, k, s], 2 * batch * (hw // s) ** 2 * c * k * k
    elif kind == "conv":
        batch, hw, cin, cout, k, s = map(int, dims)
        args, flops = [0, batch, hw, cin, cout, k, s], 2 * batch * (hw // s) ** 2 * cin * cout * k * k
    else:
        raise SystemExit(f"bad --layer {layer!r}: dw ... or conv ...")
    repeats = max(3, min(2000, int(0.2 * 3e10 / max(flops, 1))))
    return [str(a) for a in args + [threads, repeats]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rev", default="HEAD", help="git revision of side A")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--layer", action="append", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tree_a = os.path.join(tmp, "a")
        os.makedirs(tree_a)
        archive = subprocess.run(["git", "-C", ROOT, "archive", args.rev, "tf_disc/runtime"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tree_a], input=archive, check=True)
        bins = {"A": os.path.join(tmp, "a.bin"), "B": os.path.join(tmp, "b.bin")}
        build(tree_a, bins["A"])
        build(ROOT, bins["B"])
        for layer in args.layer:
            cmd = driver_args(layer, args.threads)
            ms: Dict[str, List[float]] = {"A": [], "B": []}
            sums = set()
            for _ in range(args.rounds):
                for side, binary in bins.items():
                    out = subprocess.run([binary] + cmd, check=True, capture_output=True,
                                         text=True).stdout.split()
                    ms[side].append(float(out[0]))
                    sums.add(out[1])
            a, b = statistics.median(ms["A"]), statistics.median(ms["B"])
            agree = "checksums agree" if len(sums) == 1 else f"CHECKSUMS DIFFER {sorted(sums)}"
            print(f"{layer:28s} A {a:9.4f} ms  B {b:9.4f} ms  B/A {b / a:.3f}  ({agree})")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
