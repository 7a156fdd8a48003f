"""The target interface: everything the compiler needs to know about the
machine the generated code runs on.

The frontend, the IR, the passes and the service are target-neutral: they
ask a Target for its pass list (passes parameterized by what the target
finds cheap), its code generator, its build (compiler, flags, the disk
cache) and the ops it can run.  A target's name is part of every disk-cache
key, so two targets never share a library."""
from __future__ import annotations

import abc
from typing import Callable

from ..errors import Unsupported
from ..ir.core import Func, Op
from ..options import CompileOptions

Pass = Callable[[Func], Func]


class Target(abc.ABC):
    """One code-generation target (a plug-in: target/__init__.py lists them)."""

    #: Registry name and disk-cache identity, e.g. "cpu".
    name: str = ""

    @abc.abstractmethod
    def passes(self) -> list[tuple[str, Pass]]:
        """The named pass pipeline this target's code generator expects."""

    @abc.abstractmethod
    def generate(self, func: Func, units: int) -> tuple[str, list[str]]:
        """(the library as one source, the same split into at most `units`
        sources built in parallel) for `func` after passes().  The first
        names the library in the disk cache."""

    def generate_program(self, program, units: int = 1) -> tuple[str, list[str]]:
        """As generate(), for a Program (passes/program.py: a function with
        loops) after passes() ran on every segment."""
        raise Unsupported(f"target {self.name} cannot run control flow")

    @abc.abstractmethod
    def build_flags(self, request: dict, options: CompileOptions) -> tuple[str, ...]:
        """Compiler flags beyond the build's fixed ones for this request
        (e.g. an ISA tier); part of the disk-cache key."""

    def precompiled_header(self) -> str | None:
        """The header (relative to the runtime's include folder) every
        generated unit includes first, for the build to precompile
        (build/precompiled.py); None: none."""
        return None

    def unit_names(self, count: int) -> list[str]:
        """File names of generate()'s `count` sources in a dump folder."""
        return [f"kernel_{i}.cc" if i else "kernel.cc" for i in range(count)]

    def library_builder(self, options: CompileOptions) -> Callable | None:
        """The target's own build of generate()'s sources into one shared
        library (build/cache.py _Run.builder), or None for the C++ build:
        each source a translation unit, compiled and linked by options.cxx."""
        return None

    def supports(self, op: Op) -> bool:
        """Whether generate() can emit `op` (after passes())."""
        return True

    def check_supported(self, func: Func) -> None:
        """Raises Unsupported naming the first op of func (or of a fused
        region) that this target cannot run: the cluster then stays in TF."""
        for version in (func, func.general):
            for op in version.walk() if version is not None else ():
                if not self.supports(op):
                    raise Unsupported(f"target {self.name} cannot run IR op {op.name}")

    def cache_identity(self) -> str:
        """What the disk-cache key holds for the target itself."""
        return f"target={self.name}"

