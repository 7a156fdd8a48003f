"""A generated device kernel as data: the fields of its by-value argument
struct and one or more __global__ variants (a schedule each: flat,
vectorized, strided; warp- or block-per-row) that take that struct.

The struct's layout is computed here as well, so that args.h can assert it
(static_assert on sizeof/offsetof) in both the nvcc and the g++ unit, and
so that tests can decode the argument bytes a launch receives.  Every field
is 8 bytes (pointers and int64), so the layout has no padding to disagree on.
Like codegen/kernel_code.py, the name is applied only when rendered and
locals are numbered per kernel: kernels equal but for their names have
equal shape()s (codegen/cuda/source.py deduplicates them)."""
from __future__ import annotations

import dataclasses

_CANONICAL = "DISC_KERNEL"
FIELD_BYTES = 8


@dataclasses.dataclass(frozen=True)
class Field:
    ctype: str      # "const float*", "int64_t", ...
    name: str
    count: int = 0  # > 0: an array of that many

    def line(self) -> str:
        return f"  {self.ctype} {self.name}{f'[{self.count}]' if self.count else ''};"

    @property
    def size(self) -> int:
        return FIELD_BYTES * max(self.count, 1)


@dataclasses.dataclass(frozen=True)
class DeviceKernelCode:
    fields: tuple[Field, ...]
    # (name suffix, body lines of `extern "C" __global__ void NAME<suffix>(const NAME_args c)`)
    variants: tuple[tuple[str, tuple[str, ...]], ...]

    def suffixes(self) -> tuple[str, ...]:
        return tuple(s for s, _ in self.variants)

    def offsets(self) -> dict[str, int]:
        """Byte offset of each field in the struct."""
        out, at = {}, 0
        for f in self.fields:
            out[f.name] = at
            at += f.size
        return out

    def size(self) -> int:
        return sum(f.size for f in self.fields) or FIELD_BYTES

    def struct(self, name: str) -> str:
        fields = [f.line() for f in self.fields] or ["  int64_t unused;"]
        checks = [f"static_assert(sizeof({name}_args) == {self.size()}, "
                  f"\"{name}_args layout\");"]
        checks += [f"static_assert(offsetof({name}_args, {f}) == {o}, \"{name}_args.{f}\");"
                   for f, o in self.offsets().items()]
        return "\n".join([f"struct {name}_args {{", *fields, "};", *checks, ""])

    def definitions(self, name: str) -> str:
        out = []
        for suffix, body in self.variants:
            out += ["", f"extern \"C\" __global__ void __launch_bounds__(DISC_BLOCK) "
                        f"{name}{suffix}(const {name}_args c) {{", *body, "}"]
        return "\n".join(out + [""])

    def shape(self) -> str:
        """The text under a fixed name: equal for kernels equal but for names."""
        return self.struct(_CANONICAL) + self.definitions(_CANONICAL)
