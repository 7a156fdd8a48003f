"""x86-64 ISA tiers of generated code (runtime/cpu/cpu_isa.h holds the same
tiers for the op library): each tier is an explicit -march level with a
fixed -mtune, never the build machine's native ones, so that what one machine builds runs on
every CPU of its tier, and the tier is part of the disk cache key through
the command line.

The op library decides the tier of a DiscLaunch compile (cpuid, XCR0,
DISC_MAX_CPU_ISA, the target_isa option) and puts it in the request;
host_tier() serves compiles that name none (tests, tools)."""
from __future__ import annotations

import functools
import subprocess

# Lowest first; each includes the ones before.
TIERS = ("x86-64-v2", "avx2", "avx512", "avx512_bf16", "avx512_amx")

_ALIASES = {"v2": "x86-64-v2", "sse4": "x86-64-v2", "sse41": "x86-64-v2",
            "v3": "avx2", "x86-64-v3": "avx2", "v4": "avx512", "x86-64-v4": "avx512",
            "avx512_core": "avx512", "avx512_core_bf16": "avx512_bf16",
            "avx512_core_amx": "avx512_amx", "avx10_1_512_amx": "avx512_amx"}

_MARCH = {
    "x86-64-v2": ("-march=x86-64-v2",),
    "avx2": ("-march=x86-64-v3",),
    "avx512": ("-march=x86-64-v4",),
    # Generated code has no use for BF16/VNNI or AMX instructions (the bf16
    # GEMM is in the kernel library): the same code, compiled and cached once.
    "avx512_bf16": ("-march=x86-64-v4",),
    "avx512_amx": ("-march=x86-64-v4",),
}

# /proc/cpuinfo features each tier needs beyond the one before (the psABI
# levels; runtime/cpu/cpu_isa.cc kFeatures).
_NEEDS = {
    "x86-64-v2": ("sse4_2", "popcnt"),
    "avx2": ("avx", "avx2", "fma", "f16c", "bmi1", "bmi2", "movbe"),
    "avx512": ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"),
    "avx512_bf16": ("avx512_bf16", "avx512_vnni"),
    "avx512_amx": ("amx_tile", "amx_bf16"),
}


def parse_tier(name: str) -> str:
    """The canonical tier for `name` (a tier, or an alias such as "v3",
    "x86-64-v4", "avx512_core"); ValueError for anything else."""
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in TIERS:
        raise ValueError(f"unknown target ISA {name!r}: one of {', '.join(TIERS)}")
    return key


def lower_tier(a: str, b: str) -> str:
    """The lower of two tiers."""
    return min(parse_tier(a), parse_tier(b), key=TIERS.index)


def tiers_up_to(tier: str) -> tuple:
    """Every tier from the lowest up to `tier`."""
    return TIERS[:TIERS.index(parse_tier(tier)) + 1]


def kernel_library_tier(tier: str) -> str:
    """The tier of the kernel library a tier runs (runtime/cpu/kernel_dispatch.cc
    LibraryTier): avx512_bf16 and avx512_amx run the avx512 library."""
    tier = parse_tier(tier)
    return "avx512" if tier in ("avx512_bf16", "avx512_amx") else tier


def tier_of_features(features) -> str:
    """The highest tier whose needs are all among `features` (cpuinfo names)."""
    have = set(features)
    best = TIERS[0]
    for tier in TIERS:
        if not set(_NEEDS[tier]) <= have:
            break
        best = tier
    return best


@functools.lru_cache(maxsize=1)
def host_tier() -> str:
    """This machine's tier from the features Linux reports in /proc/cpuinfo
    (it lists AVX-512 only when the OS saves ZMM state)."""
    try:
        with open("/proc/cpuinfo") as f:
            line = next((ln for ln in f if ln.startswith("flags")), "")
    except OSError:
        line = ""
    return tier_of_features(line.partition(":")[2].split())


@functools.lru_cache(maxsize=8)
def _knows_flag(cxx: str, flag: str, timeout_s: float) -> bool:
    try:
        proc = subprocess.run([cxx, flag, "-E", "-x", "c++", "/dev/null"],
                              capture_output=True, stdin=subprocess.DEVNULL, timeout=timeout_s)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def tier_flags(cxx: str, tier: str, timeout_s: float = 30.0) -> tuple:
    """The compiler flags of `tier`: its -march level, a fixed generic tune
    (the build machine's tuning never leaks in), and -mno-avx512fp16 where
    the compiler knows it (TF 2.21's Eigen header for it does not compile,
    and native fp16 would change results).  The probe for the latter runs
    within timeout_s (at most 30 s; the compile timeout)."""
    flags = _MARCH[parse_tier(tier)] + ("-mtune=generic",)
    if _knows_flag(cxx, "-mno-avx512fp16", min(30.0, max(0.1, float(timeout_s)))):
        flags += ("-mno-avx512fp16",)
    return flags
