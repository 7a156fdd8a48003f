"""IR data structures.

A Func is a straight-line list of Ops over SSA Values.  Each Value has a
dtype and a symbolic shape (tuple of dim strings, see shapes/).  A `fusion`
op holds a Region (the ops of one loop kernel); region ops may use values
from the enclosing function directly.  A `while` op holds its cond and body,
an `if` or `case` its branches, as nested Funcs that see only their own
arguments.  Ops with no results (asserts) are host-side checks kept in
program order.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator

from ..dtypes import DType


@dataclasses.dataclass(frozen=True)
class TensorType:
    dtype: DType
    shape: tuple[str, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        return f"{self.dtype.name}[{','.join(self.shape)}]"


class Value:
    """An SSA value; identity matters (two Values are never merged by name)."""

    __slots__ = ("name", "type")

    def __init__(self, name: str, type: TensorType) -> None:
        self.name = name
        self.type = type

    @property
    def dtype(self) -> DType:
        return self.type.dtype

    @property
    def shape(self) -> tuple[str, ...]:
        return self.type.shape

    def __repr__(self) -> str:
        return f"%{self.name}: {self.type}"


@dataclasses.dataclass
class Region:
    ops: list["Op"]
    outputs: list[Value]


def outer_operands(ops: list["Op"]) -> list[Value]:
    """Values ops read that none of them defines, in first-read order: the
    operands of a fusion op whose region is ops."""
    inner = {r for o in ops for r in o.results}
    out: list[Value] = []
    for o in ops:
        for v in o.operands:
            if v not in inner and v not in out:
                out.append(v)
    return out


@dataclasses.dataclass(eq=False)
class Op:
    name: str
    operands: list[Value]
    results: list[Value]
    attrs: dict = dataclasses.field(default_factory=dict)
    region: Region | None = None
    # Nested functions, isolated from the enclosing one (a `while` holds its
    # cond and body, an `if` or `case` its branches: ir/control.py).
    funcs: list["Func"] = dataclasses.field(default_factory=list)

    @property
    def result(self) -> Value:
        assert len(self.results) == 1, self.name
        return self.results[0]


@dataclasses.dataclass(eq=False)
class Func:
    name: str
    args: list[Value]
    ops: list[Op]
    rets: list[Value]
    # Per arg: None, or the constant value (flattened list) the caller gave.
    attrs: dict = dataclasses.field(default_factory=dict)
    # A speculated function (passes/speculate.py): the unspecialized version,
    # run when the guard in attrs["speculated"] fails at run time.
    general: "Func | None" = None

    def walk(self) -> Iterator[Op]:
        """All ops, including those inside fusion regions (pre-order)."""
        for op in self.ops:
            yield op
            if op.region is not None:
                yield from op.region.ops

    def users(self) -> dict[Value, list[Op]]:
        out: dict[Value, list[Op]] = {}
        for op in self.walk():
            for v in op.operands:
                out.setdefault(v, []).append(op)
        return out


class Namer:
    """Fresh SSA names for one function (explicit object, no global counter)."""

    def __init__(self, taken: set[str] | None = None) -> None:
        self.taken = set(taken or ())
        self.n = 0

    def __call__(self, prefix: str = "v") -> str:
        while f"{prefix}{self.n}" in self.taken:
            self.n += 1
        name = f"{prefix}{self.n}"
        self.taken.add(name)
        return name

    @classmethod
    def for_func(cls, func: Func) -> "Namer":
        names = {a.name for a in func.args}
        for op in func.walk():
            names.update(r.name for r in op.results)
        return cls(names)
