"""Compile options, passed in explicitly by the caller (the compiler reads no
environment variables; blade_disc_tf.config does and builds these)."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class CompileOptions:
    cache_dir: str
    dump_dir: str | None = None
    cxx: str = "c++"
    extra_cflags: tuple = ()
    # Refuse to run the system compiler (tests use it to prove cache hits).
    forbid_compile: bool = False
    timeout_s: float = 600
    # "" or "bf16": precision of float GEMMs (README "Fast math").  A compile
    # request's own "fast_math" (the key DiscLaunch computed) takes precedence.
    fast_math: str = ""
    # The ISA tier of the generated code (build/isa.py).  A compile request's
    # own "target_isa" (the op library's choice) takes precedence; "" with
    # neither means this machine's tier.
    target_isa: str = ""
    # The code-generation target (target/__init__.py): "cpu", the scalar
    # "cpu_reference" the tests compare the vectorized kernels with, or
    # "cuda".  A compile request's own "target" (DiscLaunch's device)
    # takes precedence.
    target: str = "cpu"
    # The GPU architecture of "cuda" code (e.g. "sm_90"); a compile
    # request's own "cuda_arch" (the device's) takes precedence.
    cuda_arch: str = ""
    # The CUDA compiler of "cuda" code.
    nvcc: str = "nvcc"
    # Asynchronous compile: requests keep running in TF meanwhile, so the
    # system compiler runs at BACKGROUND_NICE (build/process.py lower_priority).
    background: bool = False

    def to_dict(self) -> dict:
        """The options as JSON-able data (to a compile worker)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "CompileOptions":
        """to_dict's inverse."""
        return cls(**{**data, "extra_cflags": tuple(data.get("extra_cflags", ()))})
