"""Code-generation targets, each a plug-in behind base.Target.  A new target
is a module here (its Target subclass, added to _TARGETS), a codegen package
and a runtime folder; the frontend, registry, passes and Grappler stay as
they are."""
from __future__ import annotations

from ..options import CompileOptions
from .base import Target
from .cpu import CpuTarget, ReferenceCpuTarget
from .cuda import CudaTarget

DEFAULT_TARGET = "cpu"

_TARGETS: dict[str, Target] = {t.name: t for t in (CpuTarget(), ReferenceCpuTarget(),
                                                   CudaTarget())}


def target_names() -> tuple[str, ...]:
    return tuple(_TARGETS)


def get_target(name: str = DEFAULT_TARGET) -> Target:
    """The target called `name`; ValueError naming the known ones otherwise."""
    try:
        return _TARGETS[name or DEFAULT_TARGET]
    except KeyError:
        raise ValueError(f"unknown compile target {name!r}; known: {', '.join(_TARGETS)}") \
            from None


def target_for(request: dict, options: CompileOptions) -> Target:
    """The target of one compile request: its own "target" (the device
    DiscLaunch runs on) else the options', configured with the request's
    "cuda_arch" (else the options') for CUDA.  ValueError for an unknown
    target or a malformed architecture."""
    name = request.get("target") or options.target or DEFAULT_TARGET
    if name == CudaTarget.name:
        arch = request.get("cuda_arch") or options.cuda_arch or CudaTarget().arch
        return CudaTarget(arch, options.nvcc)
    return get_target(name)


__all__ = ["DEFAULT_TARGET", "Target", "get_target", "target_for", "target_names"]
