"""Top-level `reduce` ops (column reductions, full reductions, any reduction
over one contiguous run of dims) as two deterministic CUDA kernels over the
input viewed as [outer, red, inner]:

  _partial  one thread per (outer, chunk, inner column): the chunk's rows of
            that column combined in order into a partial (temp memory);
            threads of a warp read consecutive columns (coalesced);
  _finish   one thread per (outer, inner column): its chunks' partials
            combined in order.

No atomics: the result does not depend on scheduling, as TF's op determinism
asks.  The host chooses the chunk count from the run-time sizes (enough
threads to fill the device) and allocates the partials with rt->alloc_temp."""
from __future__ import annotations

import dataclasses

from ...ir.core import Op
from ..host_checks import alloc_temp, free_temps
from .device_code import DeviceKernelCode, Field
from .loop import GRID_STRIDE, read_only
from .ops import REDUCE_OPS, compute_type, cuda_type, reduce_init

# Rows per chunk at least (fewer would make the partials the traffic).
MIN_CHUNK_ROWS = 16


@dataclasses.dataclass
class ReduceKernel:
    name: str
    op: Op
    code: DeviceKernelCode


def reduced_run(op: Op) -> tuple[int, int] | None:
    """(first, end) of the reduced dims when they are one contiguous run."""
    dims = sorted(op.attrs["dimensions"])
    if not dims or dims != list(range(dims[0], dims[-1] + 1)):
        return None
    return dims[0], dims[-1] + 1


def build_reduce_kernel(op: Op, index: int, prefix: str = "") -> ReduceKernel:
    (x,) = op.operands
    # t: the accumulator's and the partials' type (16-bit floats add up in float)
    xt, t, ot = cuda_type(x.dtype), compute_type(x.dtype), cuda_type(op.result.dtype)
    kind = op.attrs["kind"]
    fn, init = REDUCE_OPS[kind], reduce_init(kind, t)
    fields = (Field(f"const {xt}*", "p0"), Field(f"{ot}*", "o0"), Field(f"{t}*", "t0"),
              Field("int64_t", "outer"), Field("int64_t", "red"), Field("int64_t", "inner"),
              Field("int64_t", "chunks"), Field("int64_t", "chunk"))
    partial = (*GRID_STRIDE,
               "  const int64_t items = c.outer * c.chunks * c.inner;",
               "  for (int64_t i = first; i < items; i += stride) {",
               "    const int64_t j = i % c.inner, oc = i / c.inner;",
               "    const int64_t k = oc % c.chunks, o = oc / c.chunks;",
               "    const int64_t begin = k * c.chunk;",
               "    const int64_t end = begin + c.chunk < c.red ? begin + c.chunk : c.red;",
               f"    const {xt}* p = c.p0 + o * c.red * c.inner + j;",
               f"    {t} acc = {init};",
               "    for (int64_t r = begin; r < end; ++r) "
               f"acc = {fn}()(acc, {t}({read_only('p + r * c.inner', x.dtype)}));",
               "    c.t0[i] = acc;",
               "  }")
    finish = (*GRID_STRIDE,
              "  const int64_t items = c.outer * c.inner;",
              "  for (int64_t i = first; i < items; i += stride) {",
              "    const int64_t j = i % c.inner, o = i / c.inner;",
              f"    const {t}* p = c.t0 + o * c.chunks * c.inner + j;",
              f"    {t} acc = {init};",
              f"    for (int64_t k = 0; k < c.chunks; ++k) acc = {fn}()(acc, p[k * c.inner]);",
              f"    c.o0[i] = {ot}(acc);",
              "  }")
    return ReduceKernel(f"disc_{prefix}reduce_{index}", op,
                        DeviceKernelCode(fields, (("_partial", partial), ("_finish", finish))))


def _prod(dims: list[str]) -> str:
    return " * ".join(dims) or "int64_t(1)"


def emit_reduce_launch(op: Op, k: ReduceKernel, dn, ptr: dict, kernel_id) -> list[str]:
    """Host lines: the [outer, red, inner] view, the chunk count, the
    partials' temp, both launches, the frees (kernel_id: host.py's)."""
    (x,) = op.operands
    first, end = reduced_run(op)
    xd = [dn(d) for d in x.shape]
    out = list(dn.lines)
    dn.lines = []
    t = compute_type(x.dtype)
    part = f"part_{op.result.name}"
    out += ["  {",
            f"    const int64_t outer = {_prod(xd[:first])}, red = {_prod(xd[first:end])}, "
            f"inner = {_prod(xd[end:])};",
            "    // chunks: enough (outer, chunk, column) threads to fill the device",
            "    const int64_t cells = outer * inner > 0 ? outer * inner : 1;",
            "    const int64_t want = (int64_t(dev.sm_count) * dev.max_threads_per_sm + cells - 1)"
            " / cells;",
            f"    const int64_t most = (red + {MIN_CHUNK_ROWS - 1}) / {MIN_CHUNK_ROWS};",
            "    const int64_t chunks = want < most ? (want > 0 ? want : 1) : (most > 0 ? most : 1);",
            *("  " + ln for ln in alloc_temp(part, t, ["outer", "chunks", "inner"])),
            f"    {k.name}_args c = {{}};",
            f"    c.p0 = {ptr[x]};", f"    c.o0 = {ptr[op.result]};", f"    c.t0 = {part};",
            "    c.outer = outer; c.red = red; c.inner = inner; c.chunks = chunks;",
            "    c.chunk = (red + chunks - 1) / chunks;",
            f"    if (disc_launch(rt, {kernel_id(k.name, '_partial')}, "
            "disc_grid(dev, outer * chunks * inner, DISC_CUDA_BLOCK), &c, sizeof c)) return 1;",
            f"    if (disc_launch(rt, {kernel_id(k.name, '_finish')}, "
            "disc_grid(dev, outer * inner, DISC_CUDA_BLOCK), &c, sizeof c)) return 1;",
            f"    if ({part}) rt->free_temp(rt->ctx, {part});"]
    return out + free_temps(op) + ["  }"]
