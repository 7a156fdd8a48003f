"""Text -> IR (inverse of printer.py); used by round-trip and pass tests."""
from __future__ import annotations

import json
import re

from .. import dtypes
from ..shapes.symbolic import define_interned, split_dims
from .core import Func, Op, Region, TensorType, Value

_FUNC_RE = re.compile(r"^func @([\w.\-/]+)\((.*?)\)(?: (\{.*\}))? \{$")
_TYPE_RE = re.compile(r"^(\w+)\[(.*)\]$")
_DIM_DEF_RE = re.compile(r"^dim (e[0-9a-f]{16}) = (.+)$")


def parse_type(text: str) -> TensorType:
    m = _TYPE_RE.match(text.strip())
    if not m:
        raise ValueError(f"bad type {text!r}")
    return TensorType(dtypes.from_name(m.group(1)), tuple(split_dims(m.group(2))))


def _split_types(text: str) -> list[str]:
    parts = re.split(r"(?<=\]),\s*", text.strip())
    return [p for p in parts if p]


class _Parser:
    def __init__(self, text: str) -> None:
        self.lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        self.pos = 0
        self.values: dict[str, Value] = {}

    def value(self, name: str) -> Value:
        try:
            return self.values[name.strip().lstrip("%")]
        except KeyError:
            raise ValueError(f"undefined value {name!r}") from None

    def operands(self, text: str) -> list[Value]:
        return [self.value(t) for t in text.split(",") if t.strip()]

    def parse(self) -> Func:
        while self.lines and self.lines[0].startswith("dim "):
            line = self.lines.pop(0)
            d = _DIM_DEF_RE.match(line)
            if not d:
                raise ValueError(f"bad dim definition {line!r}")
            define_interned(d.group(1), d.group(2))
        return self.func()

    def func(self) -> Func:
        """The function whose header is at self.pos, in its own value scope."""
        outer, self.values = self.values, {}
        header = self.lines[self.pos]
        m = _FUNC_RE.match(header)
        if not m:
            raise ValueError(f"bad func header {header!r}")
        args = []
        for part in re.split(r",\s*(?=%)", m.group(2)):
            if not part.strip():
                continue
            name, ty = part.split(":", 1)
            v = Value(name.strip().lstrip("%"), parse_type(ty))
            self.values[v.name] = v
            args.append(v)
        attrs = json.loads(m.group(3)) if m.group(3) else {}
        self.pos += 1
        ops, term = self.block()
        rets = self.operands(term[len("return("):-1])
        self.pos += 1  # closing brace
        self.values = outer
        return Func(m.group(1), args, ops, rets, attrs)

    def block(self) -> tuple[list[Op], str]:
        ops = []
        while True:
            line = self.lines[self.pos]
            self.pos += 1
            if line.startswith(("return(", "yield(")):
                if self.lines[self.pos - 1].startswith("yield("):
                    self.pos += 1  # closing brace
                return ops, line
            ops.append(self.op(line))

    def op(self, line: str) -> Op:
        results_txt = ""
        if line.startswith("%"):
            results_txt, line = line.split(" = ", 1)
        name, rest = line.split("(", 1)
        operand_txt, rest = rest.split(")", 1)
        operands = self.operands(operand_txt)
        rest = rest.strip()
        attrs: dict = {}
        if rest.startswith("{") and not rest == "{":
            attrs, end = json.JSONDecoder().raw_decode(rest)
            rest = rest[end:].strip()
        has_region = rest.endswith("{")
        has_funcs = rest.endswith("(")
        if has_region or has_funcs:
            rest = rest[:-1].strip()
        results = []
        if results_txt:
            types = _split_types(rest[1:]) if rest.startswith(":") else []
            names = [n.strip().lstrip("%") for n in results_txt.split(",")]
            if len(types) != len(names):
                raise ValueError(f"result/type count mismatch in {line!r}")
            results = [Value(n, parse_type(t)) for n, t in zip(names, types)]
        region, funcs = None, []
        while has_funcs and self.lines[self.pos] != ")":
            funcs.append(self.func())
        self.pos += has_funcs  # the closing parenthesis
        if has_region:
            body, term = self.block()
            region = Region(body, self.operands(term[len("yield("):-1]))
        for r in results:
            self.values[r.name] = r
        return Op(name.strip(), operands, results, attrs, region, funcs)


def parse_func(text: str) -> Func:
    """Parse one function printed by print_func."""
    return _Parser(text).parse()
