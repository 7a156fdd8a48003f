"""A generated kernel as data: the fields of its argument struct, the body
of its range function `void NAME(void* closure, int64_t begin, int64_t end)`
(after the closure cast), and optionally a NAME_chunks entry that runs it
over chunks of `chunk` elements.

The kernel's name is applied only when it is rendered, and its locals are
numbered within the kernel (LocalNames), so two kernels that differ only in
their names have equal `shape()`s: codegen/cpu/source.py deduplicates, aliases
and splits kernels into translation units as these structures, never by
editing their text."""
from __future__ import annotations

import dataclasses

from ..ir.core import Value

_CANONICAL = "DISC_KERNEL"


class LocalNames:
    """C++ names of the IR values a kernel defines: v0, v1, ... in the order
    the kernel first names them, so a kernel's text depends on its structure
    and not on where its values sit in the function."""

    def __init__(self) -> None:
        self._names: dict[Value, str] = {}

    def __call__(self, v: Value) -> str:
        return self._names.setdefault(v, f"v{len(self._names)}")

    def by_ir_name(self) -> dict[str, str]:
        """IR value name -> its C++ local (for dumps and tests)."""
        return {v.name: n for v, n in self._names.items()}


@dataclasses.dataclass(frozen=True)
class KernelCode:
    fields: tuple[str, ...]     # the argument struct's member lines
    body: tuple[str, ...]       # the range function's lines after the closure cast
    chunk: int = 0              # > 0: NAME_chunks runs NAME over chunks of this many

    def suffixes(self) -> tuple[str, ...]:
        """Its functions' names, after the kernel's name."""
        return ("", "_chunks") if self.chunk else ("",)

    def struct(self, name: str) -> str:
        return "\n".join([f"struct {name}_args {{", *self.fields, "};", ""])

    def definitions(self, name: str) -> str:
        lines = ["", f"void {name}(void* closure, int64_t begin, int64_t end) {{",
                 f"  {name}_args& c = *static_cast<{name}_args*>(closure);", *self.body, "}", ""]
        if self.chunk:
            k = self.chunk
            lines += [f"void {name}_chunks(void* closure, int64_t begin, int64_t end) {{",
                      f"  const int64_t n = static_cast<{name}_args*>(closure)->n;",
                      f"  {name}(closure, begin * {k}, end * {k} < n ? end * {k} : n);",
                      "}", ""]
        return "\n".join(lines)

    def declarations(self, name: str) -> list[str]:
        return [f"void {name}{s}(void* closure, int64_t begin, int64_t end);"
                for s in self.suffixes()]

    def text(self, name: str) -> str:
        """The kernel's source under `name`."""
        return self.struct(name) + self.definitions(name)

    def shape(self) -> str:
        """The text under a fixed name: equal for kernels equal but for names."""
        return self.text(_CANONICAL)


def field_index(items: list, v) -> int:
    """v's index in a kernel's list of fields (its buffers, say), appended
    when first used: field numbers follow first use in the kernel's body."""
    if v not in items:
        items.append(v)
    return items.index(v)
