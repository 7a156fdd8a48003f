"""How the standalone kernel drivers (conv_kernel_ab.py, gemm_skinny.py) compile
the runtime's kernel sources: as tf_disc/sources.json builds this machine's
kernel library (its "kernel_cflags" and the tier's "kernel_tiers" flags),
never -march=native."""
from __future__ import annotations

import json
import os


def host_kernel_tier() -> str:
    """The kernel library tier this machine runs (avx512_bf16 runs avx512's)."""
    from blade_disc_tf.compiler.build import isa

    return isa.kernel_library_tier(isa.host_tier())


def kernel_flags() -> list:
    """The kernel compile flags for this machine's tier (this checkout's, also
    for an A/B side built from an older revision: the sources differ, not
    the flags)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "tf_disc", "sources.json")) as f:
        cfg = json.load(f)
    return cfg["kernel_cflags"] + cfg["kernel_tiers"][host_kernel_tier()]


def build_driver(driver: str, sources: list, out: str, tree: str = "") -> None:
    """Builds benchmarks/`driver` (a standalone kernel driver) linked with
    `sources` (paths relative to `tree`, default this checkout: an A/B side
    may be an older revision's tree) with this machine's kernel flags."""
    import subprocess

    import tensorflow as tf  # its Eigen headers

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tree = tree or root
    cmd = ["g++", *kernel_flags(), "-DNDEBUG", "-std=c++17", "-w", "-I" + tree,
           "-I" + tf.sysconfig.get_include(), "-o", out, os.path.join(root, "benchmarks", driver)]
    cmd += [os.path.join(tree, s) for s in sources] + ["-lpthread", "-ldl"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building {driver} failed:\n{done.stderr[-4000:]}")


def run_driver(exe: str, *args) -> dict:
    """A driver's key=value output (e.g. "ms=1.25 GF/s=98.0") as floats."""
    import re
    import subprocess

    out = subprocess.run([exe, *map(str, args)], check=True, capture_output=True,
                         text=True).stdout
    return {k: float(v) for k, v in re.findall(r"([\w/]+)=([-\d.e+]+)", out)}
