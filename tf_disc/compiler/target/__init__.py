"""Code-generation targets, each a plug-in behind base.Target.  A new target
is a module here (its Target subclass, added to _TARGETS), a codegen package
and a runtime folder; the frontend, registry, passes and Grappler stay as
they are."""
from __future__ import annotations

from .base import Target
from .cpu import CpuTarget, ReferenceCpuTarget

DEFAULT_TARGET = "cpu"

_TARGETS: dict[str, Target] = {t.name: t for t in (CpuTarget(), ReferenceCpuTarget())}


def target_names() -> tuple[str, ...]:
    return tuple(_TARGETS)


def get_target(name: str = DEFAULT_TARGET) -> Target:
    """The target called `name`; ValueError naming the known ones otherwise."""
    try:
        return _TARGETS[name or DEFAULT_TARGET]
    except KeyError:
        raise ValueError(f"unknown compile target {name!r}; known: {', '.join(_TARGETS)}") \
            from None


__all__ = ["DEFAULT_TARGET", "Target", "get_target", "target_names"]
