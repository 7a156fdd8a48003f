"""One `stitch` op (passes/stitch.py: softmax, LayerNorm, row reductions
with their elementwise producers and consumers) -> one CUDA row kernel in
two schedules sharing one argument struct, chosen by the host from the row
length L at run time (host.py):

  _warp   one warp per row, DISC_BLOCK / DISC_WARP rows per block (L <= 512):
          lanes stride over the row, reductions are __shfl_xor_sync
          butterflies (every lane gets the result);
  _block  one block per row (L > 512): threads stride over the row, each
          reduction goes through shared memory (disc_block_allreduce).

A row runs in phases (a reduction's result is available one phase after its
input): phase p is one loop over the row computing the row values phase p
needs (reduction inputs, row outputs), recomputed from global memory (L1/L2)
rather than held; per-row values are registers of every thread of the row.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from ...ir.core import Op, Value
from ..kernel_code import LocalNames, field_index
from .device_code import DeviceKernelCode, Field
from .loop import host_scalar, read_only, scalar_fields, scalar_literal
from .ops import REDUCE_OPS, compute_type, cuda_type, emit_cuda, reduce_init

# Rows of at most this many elements get a warp each (BladeDISC's
# kRowReductionScheduleTurningSize).
WARP_ROW_MAX = 512
ROWS_PER_BLOCK = 8   # DISC_BLOCK / DISC_WARP


@dataclasses.dataclass(frozen=True)
class Schedule:
    suffix: str
    row_loop: str        # the loop over this thread's rows (defines r)
    first: str           # this thread's first element of a row
    stride: str          # and its step
    leader: str          # the one thread that stores per-row results
    allreduce: Callable[[str, str, str], str]   # (accumulator, functor, type) -> expression


WARP = Schedule(
    "_warp",
    f"for (int64_t r = int64_t(blockIdx.x) * {ROWS_PER_BLOCK} + threadIdx.x / DISC_WARP; "
    f"r < c.rows; r += int64_t(gridDim.x) * {ROWS_PER_BLOCK}) {{",
    "int64_t(threadIdx.x % DISC_WARP)", "DISC_WARP", "threadIdx.x % DISC_WARP == 0",
    lambda acc, fn, t: f"disc_warp_allreduce({acc}, {fn}())")
BLOCK = Schedule(
    "_block", "for (int64_t r = blockIdx.x; r < c.rows; r += gridDim.x) {",
    "int64_t(threadIdx.x)", "DISC_BLOCK", "threadIdx.x == 0",
    lambda acc, fn, t: f"disc_block_allreduce({acc}, {fn}(), smem_{_tag(t)})")
SCHEDULES = (WARP, BLOCK)


def _tag(t: str) -> str:
    return t.replace(" ", "_")


@dataclasses.dataclass
class RowLoad:
    """A broadcast read of external `source` into the row or per-row space."""
    source: Value
    dims: list[int]   # broadcast_dimensions


@dataclasses.dataclass
class RowKernel:
    name: str
    op: Op
    row_shape: list[str]
    buffers: list[Value] = dataclasses.field(default_factory=list)   # field p<k>
    loads: list[RowLoad] = dataclasses.field(default_factory=list)   # field st<k>
    scalars: list[Value] = dataclasses.field(default_factory=list)   # field s<k>, by value
    code: DeviceKernelCode | None = None


class _Rows:
    """Classes and phases of a stitch region's values, and their C++."""

    def __init__(self, info: RowKernel, consts: dict[Value, Op],
                 host_scalars: set[Value]) -> None:
        self.info, self.consts, self.host_scalars = info, consts, host_scalars
        self.shape = tuple(info.row_shape)
        self.outer = self.shape[:-1]
        region = info.op.region
        self.producer = {r: o for o in region.ops for r in o.results}
        self.outputs = {v: m for m, v in enumerate(region.outputs)}
        self.local = LocalNames()
        self.phase: dict[Value, int] = {}
        for o in region.ops:
            ph = max([self.phase.get(x, 0) for x in o.operands], default=0)
            self.phase[o.result] = ph + 1 if o.name == "reduce" else ph

    def is_row(self, v: Value) -> bool:
        return v.shape == self.shape

    def buf(self, v: Value) -> int:
        return field_index(self.info.buffers, v)

    def load(self, x: Value, dims: list[int], row: bool) -> str:
        """Broadcast read of external x: at element j of the row, or per row."""
        ld = RowLoad(x, dims)
        if ld not in self.info.loads:
            self.info.loads.append(ld)
        k = self.info.loads.index(ld)
        at = f"b{k} + j * c.st{k}[{len(self.shape) - 1}]" if row else f"b{k}"
        return read_only(f"c.p{self.buf(x)} + {at}", x.dtype)

    def expr(self, v: Value, lines: list[str] | None, memo: dict[Value, str]) -> str:
        """v's expression in a row loop (lines: its statements, memo: values
        defined there) or, with lines None, at row scope (per-row values)."""
        if v in memo:
            return memo[v]
        o = self.producer.get(v)
        if o is None:                      # external
            lit = scalar_literal(v, self.consts)
            if lit is not None:
                return lit
            if v in self.host_scalars:
                return host_scalar(v, self.info.scalars)
            if v.type.rank == 0 and self.outer:
                return read_only(f"c.p{self.buf(v)}", v.dtype)
            at = "row + j" if self.is_row(v) else "r"
            return read_only(f"c.p{self.buf(v)} + {at}", v.dtype)
        if o.name == "broadcast_in_dim":
            x = o.operands[0]
            if x in self.producer or x.type.rank == 0:
                return self.expr(x, lines, memo)
            return self.load(x, list(o.attrs["broadcast_dimensions"]), self.is_row(v))
        if lines is None or not self.is_row(v):
            raise AssertionError(f"per-row value %{v.name} read before it is computed")
        t = cuda_type(v.dtype)
        args = [self.expr(x, lines, memo) for x in o.operands]
        name = self.local(v)
        lines.append(f"const {t} {name} = {emit_cuda(o, args, t)};")
        memo[v] = name
        return name


def build_row_kernel(op: Op, consts: dict[Value, Op], host_scalars: set[Value],
                     index: int, prefix: str = "") -> RowKernel:
    """The kernel of stitch op (consts, host_scalars, prefix:
    loop.build_loop_kernel's)."""
    info = RowKernel(f"disc_{prefix}stitch_{index}", op, list(op.attrs["row_shape"]))
    rows = _Rows(info, consts, host_scalars)
    bodies = [(s.suffix, tuple(_body(rows, s))) for s in SCHEDULES]
    info.code = DeviceKernelCode(_fields(info), tuple(bodies))
    return info


def _body(rows: _Rows, s: Schedule) -> list[str]:
    """The kernel body of one schedule (the region is walked anew for each,
    with the same local names)."""
    info, region = rows.info, rows.info.op.region
    n = len(rows.shape)
    per_row: dict[Value, str] = {}     # per-row values defined at row scope
    scope: list[str] = []
    smem: dict[str, None] = {}
    last = max(rows.phase.values(), default=0)
    reduces = [o for o in region.ops if o.name == "reduce"]
    for p in range(last + 1):
        for o in region.ops:           # per-row values of phase p
            v = o.result
            if o.name in ("reduce", "broadcast_in_dim") or rows.is_row(v) \
                    or rows.phase[v] != p or v in per_row:
                continue
            t = cuda_type(v.dtype)
            args = [rows.expr(x, None, per_row) for x in o.operands]
            name = rows.local(v)
            scope.append(f"const {t} {name} = {emit_cuda(o, args, t)};")
            per_row[v] = name
            if v in rows.outputs:
                scope.append(f"if ({s.leader}) c.o{rows.outputs[v]}[r] = {name};")
        mine = [o for o in reduces if rows.phase.get(o.operands[0], 0) == p]
        stored = [v for v in rows.outputs if rows.is_row(v) and rows.phase[v] == p]
        if not mine and not stored:
            continue
        lines: list[str] = []
        memo = dict(per_row)
        accs = []
        for o in mine:
            t = compute_type(o.operands[0].dtype)   # 16-bit floats add up in float
            acc = f"a_{rows.local(o.result)}"
            accs.append((o, acc, t))
            scope.append(f"{t} {acc} = {reduce_init(o.attrs['kind'], t)};")
            x = rows.expr(o.operands[0], lines, memo)
            lines.append(f"{acc} = {REDUCE_OPS[o.attrs['kind']]}()({acc}, {t}({x}));")
        for v in stored:
            lines.append(f"c.o{rows.outputs[v]}[row + j] = {rows.expr(v, lines, memo)};")
        scope += [f"for (int64_t j = {s.first}; j < R; j += {s.stride}) {{",
                  *("  " + x for x in lines), "}"]
        for o, acc, t in accs:
            smem[t] = None
            rt, name = cuda_type(o.result.dtype), rows.local(o.result)
            scope.append(f"const {rt} {name} = {rt}("
                         f"{s.allreduce(acc, REDUCE_OPS[o.attrs['kind']], t)});")
            per_row[o.result] = name
            if o.result in rows.outputs:
                scope.append(f"if ({s.leader}) c.o{rows.outputs[o.result]}[r] = {name};")
    head = [f"  const int64_t R = c.dims[{n - 1}];"]
    if s is BLOCK:
        head += [f"  __shared__ {t} smem_{_tag(t)}[DISC_BLOCK / DISC_WARP];" for t in smem]
    head.append("  " + s.row_loop)
    head.append("    const int64_t row = r * R;")
    nl = len(info.loads)
    head += [f"    int64_t b{k} = 0;" for k in range(nl)]
    if nl and n > 1:
        head += ["    int64_t rem = r;",
                 f"    for (int d = {n - 2}; d >= 0; --d) {{",
                 "      const int64_t id = rem % c.dims[d];",
                 "      rem /= c.dims[d];",
                 *(f"      b{k} += id * c.st{k}[d];" for k in range(nl)),
                 "    }"]
    return head + ["    (void)row;", *("    " + x for x in scope), "  }"]


def _fields(info: RowKernel) -> tuple[Field, ...]:
    n = len(info.row_shape)
    f = [Field(f"const {cuda_type(v.dtype)}*", f"p{k}") for k, v in enumerate(info.buffers)]
    f += [Field(f"{cuda_type(v.dtype)}*", f"o{m}") for m, v in enumerate(info.op.results)]
    f.append(Field("int64_t", "dims", n))
    f += [Field("int64_t", f"st{k}", n) for k in range(len(info.loads))]
    f += scalar_fields(info.scalars)
    f.append(Field("int64_t", "rows"))
    return tuple(f)
