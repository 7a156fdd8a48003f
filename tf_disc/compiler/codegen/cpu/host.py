"""The host wrapper disc_entry: read input dims, compute every symbolic dim,
run the shape checks (TF-style messages naming node and op), allocate
outputs/temps through the runtime, then run the kernels (inline when tiny,
else rt->parallel_for with the kernel's per-element cost)."""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

from ...dtypes import DType
from ...errors import template_text
from ...ir.core import Func, Op, Value
from ...ir.opset import spec
from ...shapes.symbolic import is_static, parse_dim
from ..cstr import c_string
from ..dim_math import CHECKED, checked, floordiv, range_len, segment_count
from ..conv import emit_window
from ..gemm import DotGroups, emit_dot, emit_dot_group, emit_dot_with_epilogue
from .index_ops import GATHER_ERROR
from .kernel import KernelInfo, launch
from ..labels import emit_label_check
from .reduce import emit_cumsum, emit_reduce
from .topk import emit_topk
from .scatter import emit_dynamic_stitch, emit_segment_sum, stitch_len
from .segment import emit_segment_reduce
from .stitch import StitchInfo, emit_stitch_launch
from ..host_checks import (alloc_output, alloc_temp, free_temps, input_check,
                          kernel_error_check)
from ..c_types import c_type



ENTRY_HEAD = (
    "extern \"C\" __attribute__((visibility(\"default\"))) int32_t disc_entry("
    "const DiscRuntime* rt, const DiscBuffer* inputs,\n                               "
    "int32_t num_inputs) {")


class DimNames:
    """C++ expression for each dim string (bcast dims become locals)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.lines: list[str] = []

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
            if p[1] in CHECKED:
                self.lines += checked(name, p[1], args)
            elif p[1] == "floordiv":
                self.lines += floordiv(name, *args)
            elif p[1] in ("rangelen", "segcount"):
                self.lines += (_range_len if p[1] == "rangelen" else _segment_count)(name, p[2])
            elif p[1] == "stitchlen":
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
    from ...dtypes import from_tf
    i, j, k, t = (int(x) for x in parts)
    dt = from_tf(t)
    rd = [f"*static_cast<const {c_type(dt)}*>(inputs[{n}].data)" for n in (i, j, k)]
    return range_len(name, rd, "int64_t" if dt.is_int else c_type(dt), dt.is_int)


def _input_value(parts: list[str]) -> str:
    """Element k of input i (a scalar, or a vector whose static length
    the entry checked before any dim is computed)."""
    from ...dtypes import from_tf
    i, k, t = (int(x) for x in parts)
    return f"int64_t(static_cast<const {c_type(from_tf(t))}*>(inputs[{i}].data)[{k}])"


def _segment_count(name: str, parts: list[str]) -> list[str]:
    """Last element + 1 of vector input i, 0 when it is empty."""
    from ...dtypes import from_tf
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


def _array(name: str, items: list[str]) -> str:
    return f"const int64_t {name}[{max(len(items), 1)}] = {{{', '.join(items) or '0'}}};"


def _assert(op: Op, dn: DimNames, k: int) -> list[str]:
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
    lines = [f"  {{  // check {k}: {op.name}", f"    {_array('l', show[0])}",
             f"    {_array('r', show[1])}", f"    if (!({cond})) {{",
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


def _input_check(func: Func, i: int, a: Value) -> list[str]:
    """Input i's rank and static dims (proven by Grappler, or chosen by the
    speculation guard) checked before anything reads them: a wrong proof
    must be TF's InvalidArgument error, never an out-of-bounds kernel."""
    if not any(is_static(d) for d in a.shape):
        return input_check(i, a.type.rank, None, "")
    want = [d if is_static(d) else "-1" for d in a.shape]
    msg = (f"DiscLaunch {template_text(func.name)}: input {i} has shape {{0}} but the "
           "cluster was compiled for shape {1} (-1: any size)")
    return input_check(i, a.type.rank, want, msg)


def _const_array(op: Op) -> str:
    v = op.result
    dt: DType = v.dtype
    from .ops import literal
    vals = ", ".join(literal(x, dt) for x in op.attrs["value"])
    return f"static const {c_type(dt)} c_{v.name}[{max(len(op.attrs['value']), 1)}] = {{{vals or '0'}}};"


def render_host(func: Func, kernels: dict[Op, KernelInfo | StitchInfo],
                entry_name: str | None = None) -> tuple[str, str]:
    """Returns (file-scope constant arrays, disc_entry source); with
    entry_name, an internal function of that name instead of disc_entry."""
    dn = DimNames()
    body: list[str] = []
    ptr: dict[Value, str] = {}
    body.append(f"  if (num_inputs != {len(func.args)}) return disc_fail(rt, "
                f"DISC_ERROR_INTERNAL, \"expected {len(func.args)} inputs, got {{0}}\", "
                "disc_int_text(num_inputs).s, \"\");")
    for i, a in enumerate(func.args):
        body += _input_check(func, i, a)
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
            consts.append(_const_array(op))
            ptr[op.result] = f"c_{op.result.name}"
    checks: list[str] = []
    for k, op in enumerate(o for o in func.ops if o.name.startswith("assert_")):
        checks += _assert(op, dn, k)
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
    host = _HostState(dn, ptr, kernels)
    for k, op in enumerate(func.ops):
        body += temps.get(op, [])
        if host.groups.take(op):
            if host.groups.complete():
                body += emit_dot_group(
                    host.groups.pop(), dn, ptr, lambda ep: kernels[ep].name,
                    lambda ep: _launch_dims(ep, kernels[ep], dn),
                    lambda ep, run: _launch(ep, kernels[ep], dn, ptr, run))
            continue
        body += _host_emitter(op)(host, op, k)
    body.append("  return 0;")
    if entry_name:
        entry = [f"int32_t {entry_name}(const DiscRuntime* rt, const DiscBuffer* inputs, "
                 "int32_t num_inputs) {", *body, "}", ""]
        return "\n".join(consts) + "\n", "\n".join(entry)
    entry = [ENTRY_HEAD, *body, "}", ""]
    return "\n".join(consts) + "\n", "\n".join(entry)


@dataclasses.dataclass
class _HostState:
    """What the host emitters share while rendering one version."""
    dn: DimNames
    ptr: dict[Value, str]
    kernels: dict[Op, KernelInfo | StitchInfo]
    # dots that wait for their epilogue kernel, by result name
    dots: dict[str, tuple[int, Op]] = dataclasses.field(default_factory=dict)
    # merged dots (passes/merge_gemm.py) until the last one
    groups: DotGroups = dataclasses.field(default_factory=DotGroups)


HostEmitter = Callable[[_HostState, Op, int], list[str]]


def _emit_fusion(h: _HostState, op: Op, k: int) -> list[str]:
    if "epilogue_of" in op.attrs:  # passes/gemm_epilogue.py: run by its dot
        dk, dot = h.dots.pop(op.attrs["epilogue_of"])
        return emit_dot_with_epilogue(
            dot, h.dn, h.ptr, dk, h.kernels[op].name,
            lambda run: _launch(op, h.kernels[op], h.dn, h.ptr, run))
    return _launch(op, h.kernels[op], h.dn, h.ptr)


def _emit_dot(h: _HostState, op: Op, k: int) -> list[str]:
    if "epilogue" in op.attrs:  # emitted with its epilogue kernel, which follows
        h.dots[op.result.name] = (k, op)
        return []
    return emit_dot(op, h.dn, h.ptr, k)


def _alias(h: _HostState, op: Op, k: int) -> list[str]:
    """reshape of a dense buffer (passes/fusion.py): the same pointer."""
    h.ptr[op.result] = h.ptr[op.operands[0]]
    return []


def _rendered_before(h: _HostState, op: Op, k: int) -> list[str]:
    """Constants, host tensors and assertions: rendered ahead of the ops."""
    return []


def _library(emit: Callable[[Op, DimNames, dict, int], list[str]]) -> HostEmitter:
    return lambda h, op, k: emit(op, h.dn, h.ptr, k)


_HOST_EMITTERS: dict[str, HostEmitter] = {
    "fusion": _emit_fusion,
    "stitch": lambda h, op, k: emit_stitch_launch(op, h.kernels[op], h.dn, h.ptr),
    "reshape": _alias,
    "dot": _emit_dot,
    "window": _library(emit_window),
    "reduce": _library(emit_reduce),
    "argreduce": _library(emit_reduce),
    "cumsum": _library(emit_cumsum),
    "topk": _library(emit_topk),
    "segment_reduce": _library(emit_segment_reduce),
    "dynamic_stitch": _library(emit_dynamic_stitch),
    "segment_sum": _library(emit_segment_sum),
    "label_check": _library(emit_label_check),
    "constant": _rendered_before,
    "dims_tensor": _rendered_before,
}


def _host_emitter(op: Op) -> HostEmitter:
    """The host code of a top-level op; an op without one is a compiler
    error (the cluster then runs in TF), never silently dropped."""
    if spec(op.name).kind == "assert":
        return _rendered_before
    try:
        return _HOST_EMITTERS[op.name]
    except KeyError:
        raise NotImplementedError(f"no host code for top-level IR op {op.name}") from None


def _launch_dims(op: Op, k: KernelInfo, dn: DimNames) -> tuple[list[str], list[str]]:
    """The kernel's dims and host values (their locals go to dn.lines)."""
    dims = [dn(d) for d in op.results[0].shape]
    hostvals = [dn(d) for d in k.hostvals]
    for ld in k.loads:
        for d in ld.source.shape:
            dn(d)
    return dims, hostvals


def _launch(op: Op, k: KernelInfo, dn: DimNames, ptr: dict[Value, str],
            run: Callable[[str], list[str]] | None = None) -> list[str]:
    """The kernel's closure, its launch (or run(closure): the lines of a dot
    that runs it as its epilogue), error checks and frees."""
    dims, hostvals = _launch_dims(op, k, dn)
    out = list(dn.lines)
    dn.lines = []
    c = f"k{op.attrs['kernel']}"
    out += ["  {", f"    {k.name}_args {c} = {{}};"]
    for i, v in enumerate(k.buffers):
        out.append(f"    {c}.p{i} = {ptr[v]};")
    for m, r in enumerate(op.results):
        out.append(f"    {c}.o{m} = {ptr[r]};")
    for d, e in enumerate(dims):
        out.append(f"    {c}.dims[{d}] = {e};")
    for j, e in enumerate(hostvals):
        out.append(f"    {c}.h[{j}] = {e};")
    fast = ["false"] if k.needs_idx else ["true"]
    for j, ld in enumerate(k.loads):
        src = [dn(d) for d in ld.source.shape]
        out += dn.lines
        dn.lines = []
        for jj, (sd, od) in enumerate(zip(src, ld.dims)):
            natural = " * ".join(src[jj + 1:]) or "1"
            out.append(f"    {c}.st{j}[{od}] = {sd} == 1 ? 0 : {natural};")
            cont = " * ".join(dims[od + 1:]) or "1"
            fast.append(f"({dims[od]} == 1 || {c}.st{j}[{od}] == ({cont}))")
        for od in set(range(len(dims))) - set(ld.dims):
            fast.append(f"{dims[od]} == 1")
    n = " * ".join(dims) or "1"
    out += [f"    {c}.fast = {' && '.join(fast)};"]
    if run is not None:  # the element-range kernel, called on C's pieces
        out += run(f"&{c}")
    else:
        out += [f"    const int64_t n = {n};",
                f"    if (n > 0) {{",
                *launch(k, c, "n"),
                "    }"]
    out.append(kernel_error_check(c))
    if k.uses_gather:  # TF: "indices[1,2] = 7 is not in [0, 5)"
        ind_shape, limit = k.uses_gather
        idims = [dn(d) for d in ind_shape]
        lim = dn(limit)
        out += dn.lines
        dn.lines = []
        out += [f"    if ({c}.err == {GATHER_ERROR}) {{",
                f"      {_array('gd', idims)}",
                f"      int64_t gi[{max(len(idims), 1)}] = {{0}}, rem = {c}.bad_pos;",
                f"      for (int d = {len(idims) - 1}; d >= 0; --d) {{ gi[d] = rem % gd[d]; "
                "rem /= gd[d]; }",
                "      char a[512], b[128];",
                f"      disc_fmt_shape(a, sizeof a, gi, {len(idims)});",
                f"      snprintf(b, sizeof b, \"%lld is not in [0, %lld)\", "
                f"(long long){c}.bad_val, (long long){lim});",
                "      return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT, "
                f"{c_string('indices{0} = {1}')}, a, b);",
                "    }"]
    out += free_temps(op)
    out.append("  }")
    return out


del math
