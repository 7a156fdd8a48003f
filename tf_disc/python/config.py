"""Every setting of blade_disc_tf in one place: defaults, environment
variables, and the options `enable()` takes.  Nothing else reads os.environ.

| variable                 | option             | default                          |
|--------------------------|--------------------|----------------------------------|
| DISC_CACHE_DIR           | cache_dir          | $XDG_CACHE_HOME/blade_disc_tf-<uid> (mode 0700) |
| DISC_DUMP_DIR            | dump_dir           | unset (no dumps)                 |
| DISC_MIN_CLUSTER_SIZE    | min_cluster_size   | 2                                |
| DISC_CXX                 | cxx                | $CXX or c++                      |
| DISC_ASYNC_COMPILE       | async_compile      | 1 (0: a call that needs a compile waits for it) |
| DISC_COMPILE_TIMEOUT_S   | compile_timeout_s  | 600                              |
| DISC_FORBID_COMPILE      | forbid_compile     | 0 (1: never run the system compiler, e.g. to prove a cache hit) |
| DISC_SELF_GUARD          | self_guard         | 1 (0: never route a compiled cluster's calls back to TF, README "Self-guard") |
| DISC_FAST_MATH           | fast_math          | "" (off; "bf16": float GEMMs and convolutions round their operands to bf16, README "Fast math") |
| DISC_TARGET_ISA          | target_isa         | "" (the CPU's tier; "x86-64-v2", "avx2", "avx512", "avx512_bf16" or "avx512_amx": generated code for at most that tier) |
| DISC_DEVICE              | device             | "cpu" (clusters of CPU-placed nodes; "gpu": also of nodes placed on a GPU, run by DiscLaunch on DEVICE_GPU) |

DISC_OP_LIBRARY (a path) loads that op library instead of the one beside
this package (op_library_override).

DISC_MAX_CPU_ISA (same names) is read by the op library itself: it caps the
tier of its kernels and of everything else for the whole process.  The
runtime kernels' policy is no setting of the environment: it is set through
blade_disc_tf.kernel_policy (kernel_policy.py).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Mapping, Optional


def _default_cache_dir(env: Mapping[str, str]) -> str:
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, f"blade_disc_tf-{os.getuid()}")


def _flag(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


FAST_MATH_MODES = ("", "bf16")
DEVICES = ("cpu", "gpu")


def _device(value: Optional[str]) -> str:
    """"cpu" (the default) or "gpu" (GPU-placed nodes are clustered too)."""
    device = "cpu" if value is None or not str(value).strip() else str(value).strip().lower()
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {value!r}")
    return device


def _fast_math(value: Optional[str]) -> str:
    """"" (exact fp32) or "bf16"; None, "off", "0", "none" also mean off."""
    mode = "" if value is None else str(value).strip().lower()
    mode = "" if mode in ("off", "0", "none", "false", "fp32") else mode
    if mode not in FAST_MATH_MODES:
        raise ValueError(f"fast_math must be one of {FAST_MATH_MODES} (or off), not {value!r}")
    return mode


def _target_isa(value: Optional[str]) -> str:
    """"" (the CPU's tier) or a tier name of compiler/build/isa.py (imported
    only then: a serving process without the compiler leaves it unset)."""
    text = "" if value is None else str(value).strip()
    if not text:
        return ""
    from blade_disc_tf.compiler.build import isa

    return isa.parse_tier(text)


@dataclasses.dataclass(frozen=True)
class Options:
    """What the optimizer, the kernel and the compiler are told."""

    cache_dir: str
    dump_dir: Optional[str] = None
    min_cluster_size: int = 2
    cxx: str = "c++"
    # On: a call whose key is compiling runs in TF instead of waiting.
    async_compile: bool = True
    compile_timeout_s: float = 600.0
    forbid_compile: bool = False
    # Calls of a key and size where TF's own ops measure faster run in TF
    # (tf_disc/ops/self_guard.h); off for reproducible timings and counts.
    self_guard: bool = True
    # Off by default: an executable's GEMM precision is part of its cache key.
    fast_math: str = ""
    # "" or an x86-64 tier: generated code for at most that tier.
    target_isa: str = ""
    # "gpu": the optimizer also clusters nodes placed on GPUs (opt-in).
    device: str = "cpu"

    def __post_init__(self) -> None:
        object.__setattr__(self, "device", _device(self.device))
        object.__setattr__(self, "fast_math", _fast_math(self.fast_math))
        object.__setattr__(self, "target_isa", _target_isa(self.target_isa))

    def replace(self, **changes: Any) -> "Options":
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise TypeError(f"unknown blade_disc_tf option(s): {sorted(unknown)}")
        return dataclasses.replace(self, **changes)

    def native_json(self, enabled: bool) -> dict:
        """The subset the C++ layer reads (see tf_disc/bridge/disc_bridge.h)."""
        return {
            "enabled": enabled,
            "min_cluster_size": int(self.min_cluster_size),
            "dump_dir": self.dump_dir or "",
            "async_compile": bool(self.async_compile),
            "compile_timeout_s": float(self.compile_timeout_s),
            "self_guard": bool(self.self_guard),
            "fast_math": self.fast_math,
            "target_isa": self.target_isa,
            "device": self.device,
        }


def from_environment(env: Optional[Mapping[str, str]] = None) -> Options:
    """Options from environment variables, defaults for the rest."""
    env = os.environ if env is None else env
    return Options(
        cache_dir=env.get("DISC_CACHE_DIR") or _default_cache_dir(env),
        dump_dir=env.get("DISC_DUMP_DIR") or None,
        min_cluster_size=int(env.get("DISC_MIN_CLUSTER_SIZE", "2")),
        cxx=env.get("DISC_CXX") or env.get("CXX") or "c++",
        async_compile=_flag(env.get("DISC_ASYNC_COMPILE", "1")),
        compile_timeout_s=float(env.get("DISC_COMPILE_TIMEOUT_S", "600")),
        forbid_compile=_flag(env.get("DISC_FORBID_COMPILE", "0")),
        self_guard=_flag(env.get("DISC_SELF_GUARD", "1")),
        fast_math=env.get("DISC_FAST_MATH", ""),
        target_isa=env.get("DISC_TARGET_ISA", ""),
        device=env.get("DISC_DEVICE", "cpu"),
    )


def op_library_override(env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """DISC_OP_LIBRARY: the op library to load instead of the package's; None when unset."""
    env = os.environ if env is None else env
    return env.get("DISC_OP_LIBRARY") or None
