"""One `stitch` op (passes/stitch.py) -> one C++ row kernel.

Rows run in parallel; each row runs a short sequence of phases.  Phase p
is one vectorized loop over the row computing the row values that depend on
p reductions; the row reductions of phase p then run over their (cached)
inputs in vector registers of independent lanes (f32 sums: float lanes
folded into double per block), and the per-row values they feed are
computed before phase p + 1.  A float/double max_ignore_nan (softmax's row
max) is combined block by block inside the loop that stores its input
instead of in a second pass (float sums measured no faster so).  Row values
read in a later phase are kept in a per-chunk scratch row (malloc'ed once
per parallel chunk), so each input row is read from memory once and stays
in cache for all of its phases; a value of one cheap op of stored or input
rows (LayerNorm's x - mean) is recomputed where read instead, in a float
row sum's vector lanes too (_recomputed).
"""
from __future__ import annotations

import dataclasses

from ...ir.core import Op, Value
from . import ops as optable
from .dispatch import emit_launch
from ..host_checks import free_temps, kernel_error_check
from .reduce import _init
from .row_reduce import lane_combine, row_reduce, tree_fold
from .kernel import _scalar_const
from ..kernel_code import KernelCode, LocalNames
from ..c_types import c_type

# err code for a failed scratch allocation (the others are prelude.py's).
OOM_ERROR = 100


@dataclasses.dataclass
class RowLoad:
    """A broadcast read of external `source` into the row or per-row space."""
    source: Value
    dims: list[int]   # broadcast_dimensions
    inner: str        # "none" (per-row), "unit" (stride 1), "runtime" (field sj<k>)


@dataclasses.dataclass
class StitchInfo:
    name: str
    op: Op
    row_shape: list[str]
    buffers: list[Value] = dataclasses.field(default_factory=list)
    loads: list[RowLoad] = dataclasses.field(default_factory=list)
    cost: int = 1     # ops.cost units per row element (see row_cost)
    code: KernelCode | None = None
    locals: dict[str, str] = dataclasses.field(default_factory=dict)  # IR name -> C++


# ops.cost units per measured cycle (shared with loop kernels): the row
# loops run from L1 and vectorize fully, so a softmax row (8 units per
# element) takes 0.8 cycles per element and a LayerNorm row (4 units) 0.4
# (single thread, [4,512,768]).  Unscaled, parallel_for split 16 us of rows
# over two threads, and a waking worker on a busy machine cost more than the rows.
UNITS_PER_CYCLE = optable.UNITS_PER_CYCLE


def row_cost(info: StitchInfo, row_len: str) -> str:
    """C++ expression: estimated cycles of one row (parallel_for's unit)."""
    return f"({row_len} * {info.cost} + {UNITS_PER_CYCLE - 1}) / {UNITS_PER_CYCLE} + 1"


class _Emitter:
    def __init__(self, info: StitchInfo, consts: dict[Value, Op]) -> None:
        self.info = info
        self.consts = consts
        self.shape = tuple(info.row_shape)
        self.outer = self.shape[:-1]
        self.region_vals = {r for o in info.op.region.ops for r in o.results}
        self.phase: dict[Value, int] = {}
        self.expr: dict[Value, str] = {}
        self.invariant: set[Value] = set()   # row-shaped, constant along the row
        self.local = LocalNames()

    def is_row(self, v: Value) -> bool:
        """Row-shaped and varying along the row (computed in the j loops)."""
        return self.klass(v) == "row" and v not in self.invariant

    def klass(self, v: Value) -> str:
        if v.shape == self.shape:
            return "row"
        return "scalar" if v.type.rank == 0 and self.outer else "per_row"

    def buf(self, v: Value) -> int:
        if v not in self.info.buffers:
            self.info.buffers.append(v)
        return self.info.buffers.index(v)

    def external(self, v: Value) -> str:
        """Expression reading an external value of the op's own class."""
        lit = _scalar_const(v, self.consts)
        if lit is not None:
            return lit
        k = self.klass(v)
        p = f"c.p{self.buf(v)}"
        return {"row": f"{p}[row + j]", "per_row": f"{p}[r]", "scalar": f"{p}[0]"}[k]

    def load(self, op: Op) -> str:
        (x,) = op.operands
        lit = _scalar_const(x, self.consts)
        if lit is not None:
            return lit
        if x.type.rank == 0:
            return f"c.p{self.buf(x)}[0]"
        bd = list(op.attrs["broadcast_dimensions"])
        last = len(self.shape) - 1
        inner = "none"
        if self.klass(op.result) == "row" and last in bd:
            src = x.shape[bd.index(last)]
            inner = "none" if src == "1" else "unit" if src == self.shape[-1] else "runtime"
        # one index per distinct read: Keras LayerNorm broadcasts gamma
        # twice, and equal index expressions let the C++ compiler load it
        # (and multiply it by the equal per-row scale) once per element
        same = [k for k, ld in enumerate(self.info.loads)
                if ld.source is x and ld.dims == bd and ld.inner == inner]
        k = same[0] if same else len(self.info.loads)
        if not same:
            self.info.loads.append(RowLoad(x, bd, inner))
        p = f"c.p{self.buf(x)}"
        return {"none": f"{p}[b{k}]", "unit": f"{p}[b{k} + j]",
                "runtime": f"{p}[b{k} + j * c.sj{k}]"}[inner]


def build_stitch(op: Op, consts: dict[Value, Op], index: int) -> StitchInfo:
    info = StitchInfo(f"disc_stitch_{index}", op, list(op.attrs["row_shape"]))
    em = _Emitter(info, consts)
    region = op.region
    # Phases: a reduce result is available one phase after its input.
    for o in region.ops:
        ph = max([em.phase.get(x, 0) for x in o.operands], default=0)
        em.phase[o.result] = ph + 1 if o.name == "reduce" else ph
    outputs = {v: m for m, v in enumerate(region.outputs)}
    em.invariant = _row_invariant(em, region.ops, outputs)
    row_ops = [o for o in region.ops if o.name != "reduce" and em.is_row(o.result)]
    nphases = max([em.phase[o.result] for o in row_ops] +
                  [em.phase.get(o.operands[0], 0) for o in region.ops if o.name == "reduce"],
                  default=0) + 1
    # Row values read in a later phase than their own (or by a reduce) live
    # in scratch; loads (broadcasts of buffers) are read again instead.
    loads = {o.result for o in region.ops
             if o.name == "broadcast_in_dim" and o.operands[0] not in em.region_vals}
    scratch: list[Value] = []
    for o in region.ops:
        for x in o.operands:
            if x in em.region_vals and em.is_row(x) and x not in scratch and (
                    o.name == "reduce" or em.phase[o.result] > em.phase[x] and x not in loads):
                scratch.append(x)
    t_of = {r: c_type(r.dtype) for o in region.ops for r in o.results}
    producer = {r: o for o in region.ops for r in o.results}
    recompute = _recomputed(em, region.ops, producer, scratch, outputs, loads)
    scratch = [x for x in scratch if x not in recompute]
    cost = 0
    body: list[str] = []
    per_row_done: set[Value] = set()

    def operand(x: Value, use_phase: int) -> str:
        if x not in em.region_vals:
            return em.external(x)
        if x in scratch and em.phase[x] < use_phase:
            return f"s{scratch.index(x)}[j]"
        if x in recompute and em.phase[x] < use_phase:
            o = producer[x]
            return optable.emit(o, [operand(y, use_phase) for y in o.operands], t_of[x])
        return em.expr[x]

    def lanes_of(x: Value, vt: str, load: str, j: str) -> str:
        """x (in recompute, read by a row sum) as a vector of type vt at
        element j: its scratch rows read by load(pointer), per-row values
        as scalars (GCC broadcasts them)."""
        o = producer[x]
        args = [f"{load}(s{scratch.index(y)} + {j})" if y in scratch else
                f"{load}(c.p{em.buf(y)} + row + {j})" if em.is_row(y) else
                operand(y, em.phase[x]) for y in o.operands]
        return optable.emit(o, args, vt)

    def compute(o: Op, ph: int) -> list[str]:
        """Statements defining o's value in phase ph (none for broadcasts)."""
        r = o.result
        if o.name == "broadcast_in_dim":
            x = o.operands[0]
            em.expr[r] = em.expr[x] if x in em.region_vals else em.load(o)
            return []
        em.expr[r] = em.local(r)
        args = [operand(x, ph) for x in o.operands]
        if optable.uses_fast_exp(o, t_of[r]) and _minus_row_max(o.operands[0], producer):
            # the argument is never positive: a cheaper exp (prelude)
            variant = "nonpos_nan_free" if r not in outputs and _nan_results_replaced(
                o, region.ops, producer) else "nonpos"
            o = Op(o.name, o.operands, o.results, dict(o.attrs, fast=variant), o.region)
        e = optable.emit(o, args, t_of[r])
        return [f"const {t_of[r]} {em.local(r)} = {e};"]

    def per_row_ops(ph: int) -> list[str]:
        lines = []
        for o in region.ops:
            r = o.result
            if o.name == "reduce" or em.is_row(r) or r in per_row_done \
                    or em.phase[r] != ph:
                continue
            per_row_done.add(r)
            lines += compute(o, ph)
            if r in outputs:
                lines.append(f"c.o{outputs[r]}[r] = {em.expr[r]};")
        return lines

    for ph in range(nphases):
        body += per_row_ops(ph)
        loop: list[str] = []
        stores = False
        for o in row_ops:
            r = o.result
            if em.phase[r] != ph:
                continue
            loop += compute(o, ph)
            cost += optable.cost(o.name)
            if r in scratch:
                loop.append(f"s{scratch.index(r)}[j] = {em.expr[r]};")
            if r in outputs:
                loop.append(f"c.o{outputs[r]}[row + j] = {em.expr[r]};")
            stores = stores or r in scratch or r in outputs
        if not stores:
            loop = []   # every value is recomputed where read (_recomputed)
        fused = [o for o in region.ops if o.name == "reduce"
                 and _fusable_reduce(o, em, scratch, ph) and loop]
        if fused and _versioned(info, loop):
            body += _versioned_with_reductions(info, loop, fused, em, scratch)
        elif fused:
            decls, fused_loop = _loop_with_reductions(loop, fused, em, scratch)
            body += decls + fused_loop
        elif loop:
            body += _row_loop(info, loop)
        for o in region.ops:
            if o.name == "reduce" and em.phase.get(o.operands[0], 0) == ph:
                x = o.operands[0]
                lanes = (lambda vt, ld, j, x=x: lanes_of(x, vt, ld, j)) if x in recompute else None
                body += [] if o in fused else row_reduce(
                    o, em, scratch, vec=lanes,
                    scalar=operand(x, em.phase[x] + 1) if x in recompute else None)
                if o.result in outputs:
                    body.append(f"c.o{outputs[o.result]}[r] = {em.local(o.result)};")
                cost += 1
    body += per_row_ops(nphases)
    info.cost = cost + 1 + len(region.outputs)
    info.code = _render(info, scratch, body)
    info.locals = em.local.by_ir_name()
    return info


def _row_loop(info: StitchInfo, loop: list[str]) -> list[str]:
    """One elementwise loop over the row.  Loads whose last dim may
    broadcast (field sj<k>) get a stride-1 copy of the loop (vectorizable),
    taken unless this call really broadcasts them (stride 0); only the loops
    reading such loads are versioned, not the whole row body with its
    reductions (half of a masked softmax kernel's compile)."""
    strided = _plain_loop(loop)
    unit, fast = _unit_stride(info, strided)
    if not unit:
        return strided
    return [f"if ({unit}) {{", *["  " + x for x in fast], "} else {",
            *["  " + x for x in strided], "}"]


def _plain_loop(loop: list[str]) -> list[str]:
    """loop's statements in one loop over the row, strides as written."""
    return ["#pragma GCC ivdep", "for (int64_t j = 0; j < R; ++j) {", *["  " + x for x in loop], "}"]


def _unit_stride(info: StitchInfo, lines: list[str]) -> tuple[str, list[str]]:
    """(condition, lines with stride 1): the test that every runtime-strided
    load read in lines has stride 1 this call, and lines reading them so;
    ("", lines) when lines read none."""
    runtime = [k for k, ld in enumerate(info.loads)
               if ld.inner == "runtime" and any(f" + j * c.sj{k}]" in x for x in lines)]
    for k in runtime:
        lines = [x.replace(f" + j * c.sj{k}]", " + j]") for x in lines]
    return " && ".join(f"c.sj{k} == 1" for k in runtime), lines


def _versioned(info: StitchInfo, loop: list[str]) -> bool:
    """_row_loop emits two copies of this loop (a stride-1 and a strided one)."""
    return bool(_unit_stride(info, loop)[0])


def _fusable_reduce(o: Op, em: _Emitter, scratch: list[Value], ph: int) -> bool:
    """A float/double max_ignore_nan of a row value stored (to scratch) by
    phase ph's loop: its lanes combine in the loop's blocks."""
    x = o.operands[0]
    return (o.attrs["kind"] == "max_ignore_nan" and c_type(x.dtype) in ("float", "double")
            and x in scratch and em.phase[x] == ph and x in em.region_vals)


# Elements per block of _loop_with_reductions: two vector registers; then
# at most one block of one register.
FUSED_BLOCK = 32
HALF_BLOCK = 16


def _loop_with_reductions(loop: list[str], reds: list[Op], em: _Emitter,
                          scratch: list[Value]) -> tuple[list[str], list[str]]:
    """The row loop in blocks of FUSED_BLOCK elements, each block's values of
    reds' inputs read back from scratch (still in registers or L1) into two
    accumulator vectors: no second pass over the row for the reduction
    (5% of a softmax kernel).  A last half block of 16 combines the same
    way, then the lane fold and a scalar tail of at most 15 elements on a
    local accumulator (one in memory, or 16 scalar maxes, made the tails of
    rows of 48 or 112 elements a third of an attention softmax row).
    Returns (declarations of reds' results, the loop)."""
    decls, head, steps, half, tails = [], [], [], [], []
    for o in reds:
        x, r, t = o.operands[0], o.result, c_type(o.operands[0].dtype)
        lanes, src = 64 // (4 if t == "float" else 8), f"s{scratch.index(x)}"
        a = f"a_{em.local(r)}"
        vt = f"{a}_v"
        em.expr[r] = em.local(r)
        decls.append(f"{t} {em.local(r)};")
        head += [f"typedef {t} {vt} __attribute__((vector_size({lanes} * sizeof({t}))));",
                 f"{vt} {a}0 = {vt}{{}} + {_init('max_ignore_nan', t)}, {a}1 = {a}0;"]
        steps += [f"{{ {vt} x; std::memcpy(&x, {src} + j0 + {k * lanes}, sizeof x); "
                  f"{lane_combine('max_ignore_nan', f'{a}{k % 2}', 'x')} }}"
                  for k in range(FUSED_BLOCK // lanes)]
        half += steps[-(FUSED_BLOCK // lanes):][:HALF_BLOCK // lanes]
        tails += [lane_combine("max_ignore_nan", f"{a}0", f"{a}1"),
                  *tree_fold("max_ignore_nan", f"{a}0", lanes),
                  f"{{ {t} m = {a}0[0];",
                  f"  for (int64_t j = j0; j < R; ++j) {{ "
                  f"{lane_combine('max_ignore_nan', 'm', f'{src}[j]')} }}",
                  f"  {em.local(r)} = m; }}"]

    def block(n: int, step_lines: list[str]) -> list[str]:
        return ["  #pragma GCC ivdep", f"  for (int u = 0; u < {n}; ++u) {{",
                "    const int64_t j = j0 + u;", *["    " + x for x in loop], "  }",
                *["  " + ln for ln in step_lines]]
    return decls, ["{", "int64_t j0 = 0;", *head,
                   f"for (; j0 + {FUSED_BLOCK} <= R; j0 += {FUSED_BLOCK}) {{",
                   *block(FUSED_BLOCK, steps), "}",
                   f"if (j0 + {HALF_BLOCK} <= R) {{", *block(HALF_BLOCK, half), f"  j0 += {HALF_BLOCK};", "}",
                   "#pragma GCC ivdep",
                   "for (int64_t j = j0; j < R; ++j) {", *["  " + x for x in loop], "}",
                   *tails, "}"]


def _versioned_with_reductions(info: StitchInfo, loop: list[str], reds: list[Op],
                               em: _Emitter, scratch: list[Value]) -> list[str]:
    """A versioned loop (_row_loop) whose stores feed fusable reductions:
    the stride-1 copy combines them in its blocks (_loop_with_reductions),
    the strided one reduces in a second pass.  The attention softmax's
    scores load has a runtime stride (its last dim may broadcast), and a
    separate max pass would read each row once more."""
    unit, fast = _unit_stride(info, loop)
    decls, fused = _loop_with_reductions(fast, reds, em, scratch)
    strided = _plain_loop(loop)
    for o in reds:
        strided += row_reduce(o, em, scratch, declare=False)
    return [*decls, f"if ({unit}) {{", *["  " + x for x in fused], "} else {",
            *["  " + x for x in strided], "}"]


# Elementwise ops cheap enough to recompute where a later phase or a row sum
# reads them (one or two vector instructions per 16 elements) instead of a
# scratch store and its reloads.
_RECOMPUTE = ("add", "subtract", "multiply", "negate", "square", "squared_difference")


def _recomputed(em: _Emitter, ops: list[Op], producer: dict[Value, Op],
                scratch: list[Value], outputs: dict, loads: set[Value]) -> set[Value]:
    """Scratch rows recomputed where read instead of stored: a cheap op
    (_RECOMPUTE), not an output, of per-row values, input rows and stored
    scratch rows (and, unless a float row sum reads it in vector lanes, of
    broadcast loads); its reductions are float sums.  LayerNorm's x - mean
    (read by its last phase) and (x - mean)^2 (read by the variance sum
    only): a store and a reload per element each."""
    out: set[Value] = set()
    order = {o.result: k for k, o in enumerate(ops)}
    for x in sorted(scratch, key=order.__getitem__):   # operands first
        o = producer.get(x)
        if o is None or o.name not in _RECOMPUTE or x in outputs:
            continue
        reds = [u for u in ops if u.name == "reduce" and x in u.operands]
        if any(u.attrs["kind"] != "sum" or c_type(x.dtype) != "float" for u in reds):
            continue
        if all(not em.is_row(y) or y not in em.region_vals or (y in scratch and y not in out)
               or (y in loads and not reds) for y in o.operands):
            out.add(x)
    return out


def _minus_row_max(v: Value, producer: dict[Value, Op]) -> bool:
    """v = a - broadcast(max of a over the row) (softmax's shift): <= 0 or
    NaN, as max/max_ignore_nan reduce every element of the row of a."""
    sub = producer.get(v)
    if sub is None or sub.name != "subtract":
        return False
    a, b = sub.operands
    bc = producer.get(b)
    if bc is None or bc.name != "broadcast_in_dim":
        return False
    red = producer.get(bc.operands[0])
    return red is not None and red.name == "reduce" and red.operands[0] is a \
        and red.attrs["kind"] in ("max", "max_ignore_nan") \
        and list(bc.attrs["broadcast_dimensions"]) == list(range(red.result.type.rank))


def _nan_results_replaced(exp: Op, ops: list[Op], producer: dict[Value, Op]) -> bool:
    """Every use of exp's result is select(is_nan(x), _, exp(x)) (f32
    Softmax's NaN -> +inf, ops/reduce.py): what exp gives for a NaN x is
    never read."""
    x, e = exp.operands[0], exp.result
    users = [o for o in ops if e in o.operands]
    for o in users:
        if o.name != "select" or list(o.operands).count(e) != 1 or o.operands[2] is not e:
            return False
        pred = producer.get(o.operands[0])
        if pred is None or pred.name != "is_nan" or pred.operands[0] is not x:
            return False
    return bool(users)


def _row_invariant(em: _Emitter, ops: list[Op], outputs: dict) -> set[Value]:
    """Row-shaped values that are the same for every j (broadcasts of
    per-row values and elementwise ops of those, e.g. rsqrt(var + eps) after
    sink_broadcasts): computed once per row instead of per element."""
    inv: set[Value] = set()
    reduce_inputs = {o.operands[0] for o in ops if o.name == "reduce"}
    last = len(em.shape) - 1
    for o in ops:
        r = o.result
        if o.name == "reduce" or em.klass(r) != "row" or r in outputs or r in reduce_inputs:
            continue
        if o.name == "broadcast_in_dim":
            x, bd = o.operands[0], list(o.attrs["broadcast_dimensions"])
            ok = em.klass(x) != "row" or x in inv if x in em.region_vals else \
                last not in bd or x.shape[bd.index(last)] == "1"
        else:
            ok = all(x in inv for x in o.operands)
        if ok:
            inv.add(r)
    return inv


def emit_stitch_launch(op: Op, info: StitchInfo, dn, ptr: dict[Value, str]) -> list[str]:
    """Host lines filling the closure and running the rows (dn: DimNames)."""
    dims = [dn(d) for d in info.row_shape]
    src_dims = [[dn(d) for d in ld.source.shape] for ld in info.loads]
    out = list(dn.lines)
    dn.lines = []
    c = f"sk_{info.name}"
    out += ["  {", f"    {info.name}_args {c} = {{}};"]
    out += [f"    {c}.p{k} = {ptr[v]};" for k, v in enumerate(info.buffers)]
    out += [f"    {c}.o{m} = {ptr[r]};" for m, r in enumerate(op.results)]
    out += [f"    {c}.dims[{d}] = {e};" for d, e in enumerate(dims)]
    last = len(dims) - 1
    for k, (ld, src) in enumerate(zip(info.loads, src_dims)):
        for jj, od in enumerate(ld.dims):
            st = f"({src[jj]} == 1 ? int64_t(0) : {' * '.join(src[jj + 1:]) or 'int64_t(1)'})"
            if od < last:
                out.append(f"    {c}.st{k}[{od}] = {st};")
            elif ld.inner == "runtime":
                out.append(f"    {c}.sj{k} = {st};")
    rows = " * ".join(dims[:-1]) or "int64_t(1)"
    out += [f"    const int64_t rows = {rows};",
            "    if (rows > 0) {",
            *emit_launch("rows", row_cost(info, dims[-1]), info.name, f"&{c}"),
            "    }",
            f"    if ({c}.err == {OOM_ERROR}) return disc_fail(rt, DISC_ERROR_RESOURCE_EXHAUSTED, "
            "\"out of memory for a row of {0} elements\", disc_int_text("
            f"{dims[-1]}).s, \"\");"]
    out.append(kernel_error_check(c))
    out += free_temps(op)
    out.append("  }")
    return out


def _load_index(n: int, nl: int) -> list[str]:
    """The outer index of row `begin` and each load's offset b<k> there:
    divisions once per chunk, not per row (three 64-bit divisions per row
    were 5-16% of the attention softmax kernel at S <= 128)."""
    lines = [f"  int64_t idx[{max(n - 1, 1)}];",
             "  {",
             "    int64_t rem = begin;",
             f"    for (int d = {n - 2}; d >= 0; --d) {{ idx[d] = rem % c.dims[d]; rem /= c.dims[d]; }}",
             "  }"]
    for k in range(nl):
        lines.append(f"  int64_t b{k} = 0;")
        if n > 1:
            lines.append(f"  for (int d = 0; d < {n - 1}; ++d) b{k} += idx[d] * c.st{k}[d];")
    return lines


def _next_load_index(n: int, nl: int) -> list[str]:
    """Advance idx and the load offsets from row r - 1 to row r (odometer)."""
    bs = range(nl)
    return ["    if (r != begin) {",
            f"      for (int d = {n - 2}; d >= 0; --d) {{",
            "        ++idx[d];" + "".join(f" b{k} += c.st{k}[d];" for k in bs),
            "        if (idx[d] < c.dims[d]) break;",
            "        idx[d] = 0;" + "".join(f" b{k} -= c.st{k}[d] * c.dims[d];" for k in bs),
            "      }",
            "    }"]


def _render(info: StitchInfo, scratch: list[Value], body: list[str]) -> KernelCode:
    n = len(info.row_shape)
    nl = len(info.loads)
    fields = [f"  const {c_type(v.dtype)}* p{k};" for k, v in enumerate(info.buffers)]
    fields += [f"  {c_type(v.dtype)}* o{m};" for m, v in enumerate(info.op.results)]
    fields.append(f"  int64_t dims[{n}];")
    fields += [f"  int64_t st{k}[{max(n - 1, 1)}];" for k in range(nl)]
    fields += [f"  int64_t sj{k};" for k, ld in enumerate(info.loads) if ld.inner == "runtime"]
    fields.append("  int32_t err;")
    lines = ["  int32_t err = 0;",
             f"  const int64_t R = c.dims[{n - 1}];"]
    if scratch:
        # each scratch row starts on a cache line: 16-byte aligned rows
        # (malloc's) split the vector loads, 1.6% of the attention softmax
        sizes = " + ".join(f"sc_bytes(sizeof({c_type(v.dtype)}))" for v in scratch)
        lines += ["  const auto sc_bytes = [R](size_t size) { return (size_t(R > 0 ? R : 1) * size + 63) / 64 * 64; };",
                  f"  char* mem = static_cast<char*>(std::aligned_alloc(64, {sizes}));",
                  f"  if (!mem) {{ __atomic_store_n(&c.err, {OOM_ERROR}, __ATOMIC_RELAXED); return; }}",
                  "  char* at = mem;"]
        for k, v in enumerate(scratch):
            t = c_type(v.dtype)
            lines += [f"  {t}* __restrict__ s{k} = reinterpret_cast<{t}*>(at);",
                      f"  at += sc_bytes(sizeof({t}));"]
    if nl:
        lines += _load_index(n, nl)
    lines += ["  for (int64_t r = begin; r < end; ++r) {",
              "    const int64_t row = r * R;"]
    if nl and n > 1:
        lines += _next_load_index(n, nl)
    lines += ["    (void)row;", *["    " + s for s in body], "  }"]
    if scratch:
        lines.append("  std::free(mem);")
    lines.append("  if (err) __atomic_store_n(&c.err, err, __ATOMIC_RELAXED);")
    return KernelCode(tuple(fields), tuple(lines))
