"""The host entry of a CUDA library (host.cc): the shared checks, dims and
allocations (codegen/host_entry.py), then each op queued on the device in
program order: kernels through rt->launch with grid sizes and the variant
(loop.py, rows.py, reduce.py) chosen from run-time dims and pointers, dots through
rt->gemm (gemm_bias.py: a bias/activation epilogue runs inside the GEMM).
Every check runs before the first launch, so a bad shape is an error (or a
fallback to TF) with nothing queued."""
from __future__ import annotations

import dataclasses

from ... import dtypes
from ...ir.core import Func, Op, Value
from ...ir.opset import spec
from ..gemm import emit_dot
from ..host_checks import free_temps
from ..host_entry import DimNames, entry_prologue, finish_entry
from .gemm_bias import gemm_epilogue
from .loop import LoopKernel
from .ops import cuda_type
from .reduce import ReduceKernel, emit_reduce_launch
from .rows import ROWS_PER_BLOCK, WARP_ROW_MAX, RowKernel

Kernel = LoopKernel | RowKernel | ReduceKernel


def kernel_id(name: str, suffix: str) -> str:
    """The C++ constant naming a variant's index in the kernel table."""
    return f"DISC_K_{name}{suffix}"


@dataclasses.dataclass
class _Host:
    dn: DimNames
    ptr: dict[Value, str]
    kernels: dict[Op, Kernel]


def render_host(func: Func, kernels: dict[Op, Kernel],
                entry_name: str | None = None) -> tuple[str, str]:
    """(file-scope constant arrays, disc_entry source); with entry_name, an
    internal function of that name instead of disc_entry."""
    dn = DimNames(host_readable=lambda dt: dt == dtypes.I32)
    pro = entry_prologue(func, cuda_type, dn)
    h = _Host(pro.dn, pro.ptr, kernels)
    body = pro.body + ["  DiscDeviceInfo dev;",
                       "  if (rt->device_info(rt->ctx, &dev)) return 1;"]
    by_kernel = {op.attrs["kernel"]: op for op in func.ops if op.name == "fusion"}
    absorbed: set[Op] = set()
    for k, op in enumerate(func.ops):
        if op in absorbed:
            continue
        if op.name == "dot":
            ep = by_kernel.get(op.attrs.get("epilogue"))
            fused = gemm_epilogue(op, ep, func) if ep is not None else None
            if fused is not None:   # the GEMM writes the epilogue's result itself
                absorbed.add(ep)
                t = cuda_type(op.result.dtype)
                body += [f"  {t}* {op.result.name} = nullptr;", *pro.temps.get(ep, [])]
                body += _close(emit_dot(op, h.dn, h.ptr, k, bias=h.ptr[fused.bias],
                                        activation=fused.activation,
                                        c_ptr=h.ptr[ep.result]), ep)
                continue
            body += pro.temps.get(op, [])
            body += emit_dot(op, h.dn, h.ptr, k)
            continue
        body += pro.temps.get(op, [])
        if op.name == "fusion":
            body += _launch_loop(h, op, kernels[op])
        elif op.name == "stitch":
            body += _launch_rows(h, op, kernels[op])
        elif op.name == "reduce":
            body += emit_reduce_launch(op, kernels[op], h.dn, h.ptr, kernel_id)
        elif op.name == "reshape":   # a view of a dense buffer: the same pointer
            h.ptr[op.result] = h.ptr[op.operands[0]]
        elif op.name not in ("constant", "dims_tensor") and spec(op.name).kind != "assert":
            raise NotImplementedError(f"no CUDA host code for top-level IR op {op.name}")
    return finish_entry(pro.consts, body, entry_name)


def _close(lines: list[str], op: Op) -> list[str]:
    """A dot block with the frees of op (the absorbed epilogue) before its end."""
    return lines[:-1] + free_temps(op) + lines[-1:]


def _take_lines(dn: DimNames) -> list[str]:
    out, dn.lines = dn.lines, []
    return out


def _open_args(h: _Host, op: Op, k: Kernel, dims: list[str]) -> list[str]:
    """The dim locals named so far, then a block filling the kernel's
    argument struct `c`: buffers, results, dims, by-value host scalars (a
    shape tensor's one element)."""
    out = _take_lines(h.dn)
    out += ["  {", f"    {k.name}_args c = {{}};"]
    out += [f"    c.p{i} = {h.ptr[v]};" for i, v in enumerate(k.buffers)]
    out += [f"    c.o{m} = {h.ptr[r]};" for m, r in enumerate(op.results)]
    out += [f"    c.dims[{d}] = {e};" for d, e in enumerate(dims)]
    return out + [f"    c.s{j} = {h.ptr[v]}[0];" for j, v in enumerate(k.scalars)]


def _launch_loop(h: _Host, op: Op, k: LoopKernel) -> list[str]:
    dims = [h.dn(d) for d in op.results[0].shape]
    hostvals = [h.dn(d) for d in k.hostvals]
    srcs = [[h.dn(d) for d in ld.source.shape] for ld in k.loads]
    out = _open_args(h, op, k, dims)
    out += [f"    c.h[{j}] = {e};" for j, e in enumerate(hostvals)]
    # flat: every load reads at the element's own position this call
    flat = []
    for j, (ld, src) in enumerate(zip(k.loads, srcs)):
        for jj, (sd, od) in enumerate(zip(src, ld.dims)):
            natural = " * ".join(src[jj + 1:]) or "1"
            out.append(f"    c.st{j}[{od}] = {sd} == 1 ? 0 : {natural};")
            cont = " * ".join(dims[od + 1:]) or "1"
            flat.append(f"({dims[od]} == 1 || c.st{j}[{od}] == ({cont}))")
        flat += [f"{dims[od]} == 1" for od in sorted(set(range(len(dims))) - set(ld.dims))]
    variants = k.variants()
    aligned = [f"disc_aligned16(c.p{i})" for i in sorted(k.flat_reads)]
    aligned += [f"disc_aligned16(c.o{m})" for m in range(len(op.results))]
    out += [f"    const int64_t n = {' * '.join(dims) or '1'};",
            "    c.n = n;"]

    def go(suffix: str, units: str) -> str:
        return (f"{{ if (disc_launch(rt, {kernel_id(k.name, suffix)}, "
                f"disc_grid(dev, {units}, DISC_CUDA_BLOCK), &c, sizeof c)) return 1; }}")
    # the first variant whose condition holds, else the last one
    choices: list[tuple[str, str]] = []
    if "_flat" in variants and "_strided" in variants:
        choices.append((f"!({' && '.join(flat)})", go("_strided", "n")))
    if "_vec" in variants:
        choices.append((f"n % {k.vec} == 0 && {' && '.join(aligned)}", go("_vec", f"n / {k.vec}")))
    if "_flat" in variants:
        choices.append(("disc_int32_index(n, disc_grid(dev, n, DISC_CUDA_BLOCK))",
                        go("_flat32", "n")))
    last = go("_flat", "n") if "_flat" in variants else go("_strided", "n")
    out += [f"    {'if' if i == 0 else 'else if'} ({cond}) {stmt}"
            for i, (cond, stmt) in enumerate(choices)]
    out.append(f"    {'else ' if choices else ''}{last}")
    out += free_temps(op)
    out.append("  }")
    return out


def _launch_rows(h: _Host, op: Op, k: RowKernel) -> list[str]:
    dims = [h.dn(d) for d in k.row_shape]
    srcs = [[h.dn(d) for d in ld.source.shape] for ld in k.loads]
    out = _open_args(h, op, k, dims)
    for j, (ld, src) in enumerate(zip(k.loads, srcs)):
        for jj, od in enumerate(ld.dims):
            natural = " * ".join(src[jj + 1:]) or "int64_t(1)"
            out.append(f"    c.st{j}[{od}] = {src[jj]} == 1 ? int64_t(0) : {natural};")
    out += [f"    const int64_t rows = {' * '.join(dims[:-1]) or 'int64_t(1)'};",
            "    c.rows = rows;",
            f"    const int32_t kernel = {dims[-1]} <= {WARP_ROW_MAX} ? "
            f"{kernel_id(k.name, '_warp')} : {kernel_id(k.name, '_block')};",
            f"    const int64_t rows_per_block = {dims[-1]} <= {WARP_ROW_MAX} ? "
            f"{ROWS_PER_BLOCK} : 1;",
            "    if (disc_launch(rt, kernel, disc_grid(dev, rows, rows_per_block), &c, "
            "sizeof c)) return 1;"]
    out += free_temps(op)
    out.append("  }")
    return out
