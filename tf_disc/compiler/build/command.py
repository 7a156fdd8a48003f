"""The compiler command line, in one place.

Flags keep results equal to TF: no -ffast-math, no FMA contraction;
-fwrapv makes integer overflow wrap like TF's Eigen kernels;
-fno-math-errno only lets libm calls vectorize (values unchanged).
-fno-trapping-math lets GCC vectorize selects around divisions and floor
without masking (values unchanged; FP exceptions are masked in TF anyway).
"""
from __future__ import annotations

import functools
import os
import subprocess

RUNTIME_INCLUDE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "runtime")

# No -march here: the target tier's flags (build/isa.py) come with `extra`.
BASE_FLAGS = ("-std=c++17", "-O3", "-fPIC", "-shared",
              "-ffp-contract=off", "-fwrapv", "-fno-math-errno", "-fno-trapping-math",
              "-fvisibility=hidden",
              "-fno-exceptions", "-fno-rtti")


def include_dir() -> str:
    """Folder holding disc_abi.h (source tree, or the installed package)."""
    if os.path.isfile(os.path.join(RUNTIME_INCLUDE, "disc_abi.h")):
        return RUNTIME_INCLUDE
    import importlib.util
    spec = importlib.util.find_spec("blade_disc_tf.runtime")
    if spec and spec.submodule_search_locations:
        return list(spec.submodule_search_locations)[0]
    return RUNTIME_INCLUDE


def compile_command(cxx: str, src: str, out: str, extra: tuple = ()) -> list[str]:
    return [cxx, *BASE_FLAGS, *extra, "-I", include_dir(), src, "-o", out]


def object_command(cxx: str, src: str, out: str, extra: tuple = ()) -> list[str]:
    """One translation unit of a multi-unit library -> object file."""
    flags = [f for f in BASE_FLAGS if f != "-shared"]
    return [cxx, *flags, *extra, "-I", include_dir(), "-c", src, "-o", out]


def link_command(cxx: str, objects: list[str], out: str, extra: tuple = ()) -> list[str]:
    return [cxx, *BASE_FLAGS, *extra, *objects, "-o", out]


def compiler_identity(cxx: str, timeout_s: float = 30.0) -> str:
    """`cxx --version` first line; part of the cache key (the target tier is
    in the command line).  The probe honours the compile timeout too (at
    most 30 s)."""
    return _identity(cxx, min(30.0, max(0.1, float(timeout_s))))


@functools.lru_cache(maxsize=8)
def _identity(cxx: str, timeout_s: float) -> str:
    try:
        ver = subprocess.run([cxx, "--version"], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=timeout_s).stdout.splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError) as e:
        ver = f"unknown ({e})"
    return ver
