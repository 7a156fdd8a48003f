"""Executables embedded in DiscLaunch's `executables` attr (format documented
in tf_disc/ops/embedded.h): the writer side, and the CPU features a library
built here needs, so a serving machine without them falls back instead of
crashing on an illegal instruction."""
from __future__ import annotations

import functools
import hashlib
import subprocess

MAGIC = b"DISCEXE1"

# Compiler macro -> /proc/cpuinfo flag name (x86; what a -march can turn on).
_X86_MACROS = {
    "__SSE3__": "pni", "__SSSE3__": "ssse3", "__SSE4_1__": "sse4_1",
    "__SSE4_2__": "sse4_2", "__POPCNT__": "popcnt", "__AVX__": "avx",
    "__AVX2__": "avx2", "__FMA__": "fma", "__F16C__": "f16c", "__BMI__": "bmi1",
    "__BMI2__": "bmi2", "__LZCNT__": "abm", "__MOVBE__": "movbe",
    "__AVX512F__": "avx512f", "__AVX512CD__": "avx512cd", "__AVX512DQ__": "avx512dq",
    "__AVX512BW__": "avx512bw", "__AVX512VL__": "avx512vl",
    "__AVX512VNNI__": "avx512_vnni", "__AVX512BF16__": "avx512_bf16",
    "__AVX512FP16__": "avx512_fp16", "__AVX512VBMI__": "avx512vbmi",
    "__AVX512VBMI2__": "avx512_vbmi2", "__AVX512IFMA__": "avx512ifma",
    "__AVX512BITALG__": "avx512_bitalg", "__AVX512VPOPCNTDQ__": "avx512_vpopcntdq",
    "__AVXVNNI__": "avx_vnni", "__GFNI__": "gfni", "__VAES__": "vaes",
    "__VPCLMULQDQ__": "vpclmulqdq", "__AMX_TILE__": "amx_tile",
    "__AMX_INT8__": "amx_int8", "__AMX_BF16__": "amx_bf16",
}


@functools.lru_cache(maxsize=4)
def required_cpu_features(cxx: str, extra_cflags: tuple = ()) -> tuple:
    """cpuinfo names of the ISA extensions the compiler command enables (the
    target tier's -march, compiler/build/isa.py, is among extra_cflags), from
    its predefined macros."""
    from blade_disc_tf.compiler.build.command import BASE_FLAGS

    flags = [f for f in BASE_FLAGS if f not in ("-shared",)]
    cmd = [cxx, *flags, *extra_cflags, "-dM", "-E", "-x", "c++", "/dev/null"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         stdin=subprocess.DEVNULL, timeout=60).stdout
    defined = {line.split()[1] for line in out.splitlines() if line.startswith("#define ")}
    return tuple(sorted(name for macro, name in _X86_MACROS.items() if macro in defined))


def encode_entry(key: str, library: bytes, cpu_features: tuple) -> bytes:
    """One attr string: header lines then the library bytes."""
    if "\n" in key or any("," in f or "\n" in f for f in cpu_features):
        raise ValueError(f"cannot embed key {key!r} / features {cpu_features!r}")
    header = b"\n".join([MAGIC, key.encode(), hashlib.sha256(library).hexdigest().encode(),
                         ",".join(cpu_features).encode(), str(len(library)).encode()])
    return header + b"\n" + library


def decode_entry(blob: bytes) -> dict:
    """The header fields and library of an entry (for reports and tests)."""
    parts = blob.split(b"\n", 5)
    if len(parts) != 6 or parts[0] != MAGIC:
        raise ValueError("not an embedded DiscLaunch executable")
    return {"key": parts[1].decode(), "sha256": parts[2].decode(),
            "cpu_features": [f for f in parts[3].decode().split(",") if f],
            "size": int(parts[4]), "library": parts[5]}
