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
