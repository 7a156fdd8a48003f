"""The machine a benchmark ran on, for its output: every figure names its
CPU (model name, family/model, the ISA flags that change which kernels run)
and the CPU count."""
from __future__ import annotations

import os

FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",
         "amx_bf16")


def cpu_summary() -> str:
    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "cpu family", "model", "flags") and key not in info:
                    info[key] = value.strip()
                if not line.strip() and info:
                    break
    except OSError:
        return f"unknown CPU; {os.cpu_count()} CPUs"
    flags = set(info.get("flags", "").split())
    have = " ".join(f for f in FLAGS if f in flags) or "none of " + " ".join(FLAGS)
    return (f"{info.get('model name', 'unknown')} (family {info.get('cpu family', '?')} "
            f"model {info.get('model', '?')}); {os.cpu_count()} CPUs; flags: {have}")
