"""The target-neutral part of a library's host entry (disc_entry): read
the input dims, compute every symbolic dim (DimNames), run the shape checks
(TF-style messages naming node and op), build shape-valued tensors on the
host and allocate outputs and temps through the runtime.  Each target's
host code (codegen/<target>/host.py) adds how its ops run."""
from __future__ import annotations

import dataclasses
from typing import Callable

from .. import dtypes
from ..dtypes import DType
from ..errors import Unsupported, template_text
from ..ir.core import Func, Op, Value
from ..ir.opset import spec
from ..shapes.symbolic import is_static, parse_dim
from .c_types import c_type
from .cstr import c_string
from .dim_math import CHECKED, checked, floordiv, range_len, segment_count, stitch_len
from .expressions import literal
from .host_checks import alloc_output, alloc_temp, input_check

ENTRY_HEAD = (
    "extern \"C\" __attribute__((visibility(\"default\"))) int32_t disc_entry("
    "const DiscRuntime* rt, const DiscBuffer* inputs,\n                               "
    "int32_t num_inputs) {")


class DimNames:
    """C++ expression for each dim string (bcast dims become locals)."""

    def __init__(self, host_readable: Callable[[DType], bool] | None = None) -> None:
        self.names: dict[str, str] = {}
        self.lines: list[str] = []
        # Whether the host may read an input of this dtype (a device target
        # keeps only int32 inputs in host memory, disc_abi.h); None: all.
        self.host_readable = host_readable

    def _readable(self, parts: list[str], tf_dtype: str | None = None) -> None:
        """Unsupported unless the host can read the input values a dim
        needs (dtype: the parts' last entry, a TF enum, else tf_dtype)."""
        if self.host_readable is None:
            return
        from ..dtypes import from_tf
        dt = dtypes.I32 if tf_dtype == "int32" else from_tf(int(parts[-1]))
        if not self.host_readable(dt):
            raise Unsupported(f"a dim read from the values of a {dt.name} input, which "
                              "this target keeps in device memory")

    def __call__(self, d: str) -> str:
        if is_static(d):
            return f"int64_t({d})"
        if d in self.names:
            return self.names[d]
        p = parse_dim(d)
        if p[0] == "sym":
            raise KeyError(f"symbol {d} is not read from any input")
        if p[0] == "expr":
            args = [] if p[1] in ("rangelen", "segcount", "val", "stitchlen") else \
                [self(x) for x in p[2]]
            name = f"d{len(self.names)}"  # after the args' own locals
            if p[1] in ("rangelen", "segcount", "val"):
                self._readable(p[2])
            if p[1] in CHECKED:
                self.lines += checked(name, p[1], args)
            elif p[1] == "floordiv":
                self.lines += floordiv(name, *args)
            elif p[1] in ("rangelen", "segcount"):
                self.lines += (_range_len if p[1] == "rangelen" else _segment_count)(name, p[2])
            elif p[1] == "stitchlen":
                self._readable(p[2][1:], "int32")
                self.lines += stitch_len(name, p[2])
            else:
                expr = _input_value(p[2]) if p[1] == "val" else _dim_expr(p[1], args)
                self.lines.append(f"  const int64_t {name} = {expr};")
            self.names[d] = name
            return name
        parts = [self(x) for x in p[1]]
        name = f"d{len(self.names)}"
        # Valid once the broadcast asserts passed: the non-1 part (or 1).
        expr = "int64_t(1)"
        for x in parts:
            expr = f"({x} != 1 ? {x} : {expr})"
        self.lines.append(f"  const int64_t {name} = {expr};")
        self.names[d] = name
        return name


def _range_len(name: str, parts: list[str]) -> list[str]:
    """TF Range's size from its scalar inputs i, j, k of dtype t."""
    from ..dtypes import from_tf
    i, j, k, t = (int(x) for x in parts)
    dt = from_tf(t)
    rd = [f"*static_cast<const {c_type(dt)}*>(inputs[{n}].data)" for n in (i, j, k)]
    return range_len(name, rd, "int64_t" if dt.is_int else c_type(dt), dt.is_int)


def _input_value(parts: list[str]) -> str:
    """Element k of input i (a scalar, or a vector whose static length
    the entry checked before any dim is computed)."""
    from ..dtypes import from_tf
    i, k, t = (int(x) for x in parts)
    return f"int64_t(static_cast<const {c_type(from_tf(t))}*>(inputs[{i}].data)[{k}])"


def _segment_count(name: str, parts: list[str]) -> list[str]:
    """Last element + 1 of vector input i, 0 when it is empty."""
    from ..dtypes import from_tf
    i, t = (int(x) for x in parts)
    last = (f"int64_t(static_cast<const {c_type(from_tf(t))}*>(inputs[{i}].data)"
            f"[inputs[{i}].dims[0] - 1])")
    return segment_count(name, last, f"inputs[{i}].dims[0]")


def _dim_expr(fn: str, a: list[str]) -> str:
    """C++ for a derived dim (shapes/symbolic.py EXPR_FNS) that cannot
    overflow (the arithmetic ones are dim_math's)."""
    if fn == "ifzero":
        return f"({a[0]} == 0 ? {a[1]} : {a[2]})"
    if fn in ("max", "min"):
        return f"({a[0]} {'>' if fn == 'max' else '<'} {a[1]} ? {a[0]} : {a[1]})"
    raise KeyError(f"unknown dim function {fn}")


def int64_array(name: str, items: list[str]) -> str:
    return f"const int64_t {name}[{max(len(items), 1)}] = {{{', '.join(items) or '0'}}};"


def entry_assert(op: Op, dn: DimNames, k: int) -> list[str]:
    a = op.attrs
    msg = a["msg"] + template_text(f" (node '{a['node']}', op {a['op']})")
    lhs, rhs = [dn(d) for d in a["lhs"]], [dn(d) for d in a["rhs"]]
    if op.name == "assert_broadcastable":
        n = max(len(lhs), len(rhs))
        pl = ["int64_t(1)"] * (n - len(lhs)) + lhs
        pr = ["int64_t(1)"] * (n - len(rhs)) + rhs
        conds = [f"({x} == {y} || {x} == 1 || {y} == 1)" for x, y in zip(pl, pr)]
        show = (lhs, rhs)
    else:
        conds = [f"{x} == {y}" for x, y in zip(lhs, rhs)]
        show = (lhs, rhs)
    if "lhs_shape" in a:  # show the full operand shapes instead of the dims checked
        show = ([dn(d) for d in a["lhs_shape"]], [dn(d) for d in a["rhs_shape"]])
    cond = " && ".join(conds) or "true"
    lines = [f"  {{  // check {k}: {op.name}", f"    {int64_array('l', show[0])}",
             f"    {int64_array('r', show[1])}", f"    if (!({cond})) {{",
             "      char a[512], b[512];"]
    if op.name == "assert_dim_eq" and "lhs_shape" not in a:
        lines += ['      snprintf(a, sizeof a, "%lld", (long long)l[0]);',
                  '      snprintf(b, sizeof b, "%lld", (long long)r[0]);']
    else:
        lines += [f"      disc_fmt_shape(a, sizeof a, l, {len(show[0])});",
                  f"      disc_fmt_shape(b, sizeof b, r, {len(show[1])});"]
    code = "DISC_ERROR_FALLBACK" if a.get("fallback") else "DISC_ERROR_INVALID_ARGUMENT"
    lines += [f"      return disc_fail(rt, {code}, {c_string(msg)}, a, b);",
              "    }", "  }"]
    return lines


def entry_input_check(func: Func, i: int, a: Value) -> list[str]:
    """Input i's rank and static dims (proven by Grappler, or chosen by the
    speculation guard) checked before anything reads them: a wrong proof
    must be TF's InvalidArgument error, never an out-of-bounds kernel."""
    if not any(is_static(d) for d in a.shape):
        return input_check(i, a.type.rank, None, "")
    want = [d if is_static(d) else "-1" for d in a.shape]
    msg = (f"DiscLaunch {template_text(func.name)}: input {i} has shape {{0}} but the "
           "cluster was compiled for shape {1} (-1: any size)")
    return input_check(i, a.type.rank, want, msg)


def const_array(op: Op, c_type: Callable[[DType], str] = c_type) -> str:
    v = op.result
    dt: DType = v.dtype
    vals = ", ".join(literal(x, dt) for x in op.attrs["value"])
    return f"static const {c_type(dt)} c_{v.name}[{max(len(op.attrs['value']), 1)}] = {{{vals or '0'}}};"


@dataclasses.dataclass
class EntryPrologue:
    """disc_entry up to its ops: file-scope constant arrays, the body so far,
    the dims (their locals), each value's C++ pointer, and each op's temp
    allocations (emitted just before the op)."""
    consts: list[str]
    body: list[str]
    dn: DimNames
    ptr: dict[Value, str]
    temps: dict[Op, list[str]]


def entry_prologue(func: Func, c_type: Callable[[DType], str] = c_type,
                   dn: DimNames | None = None) -> EntryPrologue:
    """The checks, dims, host tensors and allocations of func's entry
    (c_type: the target's element types)."""
    dn = dn or DimNames()
    body: list[str] = []
    ptr: dict[Value, str] = {}
    body.append(f"  if (num_inputs != {len(func.args)}) return disc_fail(rt, "
                f"DISC_ERROR_INTERNAL, \"expected {len(func.args)} inputs, got {{0}}\", "
                "disc_int_text(num_inputs).s, \"\");")
    for i, a in enumerate(func.args):
        body += entry_input_check(func, i, a)
        for j, d in enumerate(a.shape):
            # speculated: equal by the guard; a derived dim of a program
            # segment's input (passes/program.py) is computed, not read
            if is_static(d) or d in dn.names or parse_dim(d)[0] != "sym":
                continue
            dn.names[d] = d
            body.append(f"  const int64_t {d} = inputs[{i}].dims[{j}];")
        ptr[a] = f"static_cast<const {c_type(a.dtype)}*>(inputs[{i}].data)"
    consts = []
    for op in func.ops:
        if op.name == "constant":
            consts.append(const_array(op, c_type))
            ptr[op.result] = f"c_{op.result.name}"
    checks: list[str] = []
    for k, op in enumerate(o for o in func.ops if o.name.startswith("assert_")):
        checks += entry_assert(op, dn, k)
    body += dn.lines
    dn.lines = []
    body += checks
    for op in func.ops:  # shape-valued tensors computed on the host
        if op.name == "dims_tensor":
            t, vals = c_type(op.result.dtype), [dn(d) for d in op.attrs["dims"]]
            body += dn.lines
            dn.lines = []
            items = ", ".join(f"{t}({v})" for v in vals) or "0"
            body.append(f"  const {t} h_{op.result.name}[{max(len(vals), 1)}] = {{{items}}};")
            ptr[op.result] = f"h_{op.result.name}"
    # Buffers: outputs up front; each temp just before the op that writes it
    # (freed after its last reader), so the peak is the live set, not the
    # sum of all temps (BERT-base at 8x256: ~1 GB).  Dims stay up front.
    temps: dict[Op, list[str]] = {}
    for op in func.ops:
        if spec(op.name).kind not in ("fusion", "library"):
            continue
        for r, where in zip(op.results, op.attrs["buffers"]):
            dims = [dn(d) for d in r.shape]
            body += dn.lines
            dn.lines = []
            t = c_type(r.dtype)
            if where.startswith("out:"):
                body += alloc_output(r.name, t, int(where[4:]), dims)
            else:
                temps.setdefault(op, []).extend(alloc_temp(r.name, t, dims))
            ptr[r] = r.name
    return EntryPrologue(consts, body, dn, ptr, temps)


def finish_entry(consts: list[str], body: list[str],
                 entry_name: str | None = None) -> tuple[str, str]:
    """(file-scope constant arrays, the entry's source) from its body; with
    entry_name, an internal function of that name instead of disc_entry."""
    body = body + ["  return 0;"]
    if entry_name:
        entry = [f"int32_t {entry_name}(const DiscRuntime* rt, const DiscBuffer* inputs, "
                 "int32_t num_inputs) {", *body, "}", ""]
        return "\n".join(consts) + "\n", "\n".join(entry)
    entry = [ENTRY_HEAD, *body, "}", ""]
    return "\n".join(consts) + "\n", "\n".join(entry)


def speculation_guard(func: Func) -> str:
    """C++ condition (in disc_entry): the inputs have the ranks, and the dims
    the equalities, that speculated func (passes/speculate.py) assumes; its
    general version runs otherwise."""
    args = func.general.args      # the input dims as given
    where = {d: f"inputs[{i}].dims[{j}]" for i, a in reversed(list(enumerate(args)))
             for j, d in reversed(list(enumerate(a.shape)))}
    conds = [f"num_inputs == {len(args)}"]
    conds += [f"inputs[{i}].rank == {a.type.rank}" for i, a in enumerate(args)]
    conds += [f"{where[d]} == {where.get(rep, f'int64_t({rep})')}"
              for d, rep in func.attrs["speculated"]]
    return " &&\n      ".join(conds)
