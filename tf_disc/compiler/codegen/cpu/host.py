"""The host wrapper disc_entry: read input dims, compute every symbolic dim,
run the shape checks (TF-style messages naming node and op), allocate
outputs/temps through the runtime, then run the kernels (inline when tiny,
else rt->parallel_for with the kernel's per-element cost)."""
from __future__ import annotations

import dataclasses
from typing import Callable

from ...ir.core import Func, Op, Value
from ...ir.opset import spec
from ..cstr import c_string
from ..conv import emit_window
from ..gemm import DotGroups, emit_dot, emit_dot_group, emit_dot_with_epilogue
from ..host_entry import (ENTRY_HEAD, DimNames, entry_prologue, finish_entry,  # noqa: F401
                          int64_array)
from ..index_ops import GATHER_ERROR
from .kernel import KernelInfo, launch
from ..labels import emit_label_check
from .reduce import emit_cumsum, emit_reduce
from .topk import emit_topk
from .scatter import emit_dynamic_stitch, emit_segment_sum
from .segment import emit_segment_reduce
from .stitch import StitchInfo, emit_stitch_launch
from ..host_checks import free_temps, kernel_error_check


def render_host(func: Func, kernels: dict[Op, KernelInfo | StitchInfo],
                entry_name: str | None = None) -> tuple[str, str]:
    """Returns (file-scope constant arrays, disc_entry source); with
    entry_name, an internal function of that name instead of disc_entry."""
    pro = entry_prologue(func)
    body, dn, ptr, temps = pro.body, pro.dn, pro.ptr, pro.temps
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
    return finish_entry(pro.consts, body, entry_name)


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
        for d in ld.view.attrs["strides"] if ld.view is not None else ld.source.shape:
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
        if ld.view is not None:  # the view's own strides; contiguous: the flat loop
            strides = [dn(s) for s in ld.view.attrs["strides"]]  # declared by _launch_dims
            for od, st in enumerate(strides):
                out.append(f"    {c}.st{j}[{od}] = {st};")
                cont = " * ".join(dims[od + 1:]) or "1"
                fast.append(f"({dims[od]} == 1 || {c}.st{j}[{od}] == ({cont}))")
            continue
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
                f"      {int64_array('gd', idims)}",
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

