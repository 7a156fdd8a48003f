"""The runtime kernels' policy: which kernel path a GEMM or convolution takes
where more than one computes the same result (tf_disc/runtime/cpu/kernel_policy.h).

The defaults are the product's.  Benchmarks and tests change fields for a
block, to time or check one path against another in one process:

    with blade_disc_tf.kernel_policy(skinny_gemm="off"):
        ...   # skinny GEMMs run on Eigen
    blade_disc_tf.current_kernel_policy()   # the policy in force

The policy is process-wide (every thread's kernels see it) and is set in the
op library through its C API, never through the environment.
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Any, Dict, Iterator, Literal, Tuple

from . import _library

# Each choice field's values, in the order of their C enum values
# (runtime/cpu/kernel_policy.h SkinnyGemm, PathChoice).
SKINNY_GEMM = ("on", "off", "wide_tile")
PATH_CHOICE = ("auto", "off", "on")

_CHOICES = {"skinny_gemm": SKINNY_GEMM, "conv_transpose_col2im": PATH_CHOICE,
            "packed_gemm": PATH_CHOICE, "bf16_gemm": PATH_CHOICE}
_KERNEL_THREADS = (0, 1)


@dataclasses.dataclass(frozen=True)
class KernelPolicy:
    """One setting of every kernel path (defaults: the product's)."""

    # "off": skinny float products (m <= 128) on Eigen; "wide_tile": the
    # skinny kernel's wide tile for every m (default: narrow for m <= 32).
    skinny_gemm: Literal["on", "off", "wide_tile"] = "on"
    # False: GEMM epilogues as a second pass over C (merged GEMMs one by one).
    gemm_epilogue_fusion: bool = True
    # False: convolutions as im2col + GEMM instead of the direct kernel.
    direct_conv: bool = True
    # Transposed convolutions by col2im: "auto" by shape, or forced.
    conv_transpose_col2im: Literal["auto", "off", "on"] = "auto"
    # The packed float GEMM kernel: "auto" by shape, "off" Eigen for every
    # non-skinny float product, "on" the kernel for all of them.
    packed_gemm: Literal["auto", "off", "on"] = "auto"
    # False: float weights packed on every call instead of once.
    prepack_weights: bool = True
    # False: merged GEMMs (one input, several weights) one product at a time.
    multi_gemm: bool = True
    # fast_math="bf16"'s bf16 GEMM kernel: "auto" where it pays on this CPU,
    # "on" wherever the CPU tier has AVX512_BF16, "off" never (fp32).
    bf16_gemm: Literal["auto", "off", "on"] = "auto"
    # 0: library kernels on the intra-op pool; 1: on one thread.
    kernel_threads: int = 0

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            _check(field.name, getattr(self, field.name))

    def replace(self, **changes: Any) -> "KernelPolicy":
        """A copy with `changes`; TypeError naming an unknown field."""
        unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(self)})
        if unknown:
            raise TypeError(f"unknown kernel policy field(s): {unknown}")
        return dataclasses.replace(self, **changes)

    def native(self) -> Dict[str, int]:
        """The fields as disc_bridge.h DiscKernelPolicy's int32s."""
        return {name: _CHOICES[name].index(value) if name in _CHOICES else int(value)
                for name, value in dataclasses.asdict(self).items()}

    @classmethod
    def from_native(cls, values: Dict[str, int]) -> "KernelPolicy":
        """The policy of DiscKernelPolicy's int32s (the inverse of native)."""
        fields: Dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            value = values[field.name]
            if field.name in _CHOICES:
                fields[field.name] = _CHOICES[field.name][value]
            else:
                fields[field.name] = bool(value) if isinstance(field.default, bool) else value
        return cls(**fields)


def _check(name: str, value: Any) -> None:
    """TypeError / ValueError naming the field when `value` does not fit it."""
    if name in _CHOICES:
        if not isinstance(value, str):
            raise TypeError(f"kernel policy {name} takes a string, not {value!r}")
        if value not in _CHOICES[name]:
            raise ValueError(f"kernel policy {name} must be one of {_CHOICES[name]}, "
                             f"not {value!r}")
    elif name == "kernel_threads":
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"kernel policy kernel_threads takes an int, not {value!r}")
        if value not in _KERNEL_THREADS:
            raise ValueError("kernel policy kernel_threads must be 0 (the intra-op pool) "
                             f"or 1 (one thread), not {value!r}")
    elif not isinstance(value, bool):
        raise TypeError(f"kernel policy {name} takes a bool, not {value!r}")


def parse_kernel_policy_setting(text: str) -> Tuple[str, Any]:
    """"NAME=VALUE" (a command-line flag of a benchmark) as (field, typed
    value): bools from true/false/1/0, kernel_threads an int, choices as
    written.  TypeError / ValueError naming the field as kernel_policy raises."""
    name, sep, raw = text.partition("=")
    name, raw = name.strip(), raw.strip()
    fields = {f.name: f for f in dataclasses.fields(KernelPolicy)}
    if not sep or name not in fields:
        raise TypeError(f"{text!r} is no kernel policy NAME=VALUE (fields: {sorted(fields)})")
    value: Any = raw
    if isinstance(fields[name].default, bool):
        flags = {"true": True, "1": True, "false": False, "0": False}
        if raw.lower() not in flags:
            raise ValueError(f"kernel policy {name} takes true or false, not {raw!r}")
        value = flags[raw.lower()]
    elif isinstance(fields[name].default, int):
        value = int(raw) if raw.lstrip("-").isdigit() else raw
    _check(name, value)
    return name, value


def current_kernel_policy() -> KernelPolicy:
    """The policy the runtime kernels use now."""
    return KernelPolicy.from_native(_library.load().kernel_policy())


@contextlib.contextmanager
def kernel_policy(**changes: Any) -> Iterator[KernelPolicy]:
    """Sets the named fields of the kernel policy for the block and yields
    the policy in force; the policy from before is restored on exit.
    TypeError / ValueError naming the field for an unknown field or a value
    it does not take (nothing is changed then).  As a decorator,
    kernel_policy(**changes)(fn) runs each call of fn under the changes."""
    library = _library.load()
    saved = current_kernel_policy()
    policy = saved.replace(**changes)
    library.set_kernel_policy(policy.native())
    try:
        yield policy
    finally:
        library.set_kernel_policy(saved.native())
