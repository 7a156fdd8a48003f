"""One fusion op -> one C++ loop kernel over its symbolic output shape.

Three loops per kernel: a flat contiguous loop (taken when, at run time, no
strided load actually broadcasts: vectorizable), a row loop (every strided
load is contiguous along the last dim, e.g. a bias add or a view of a
column block such as one LSTM gate of the [B, 4H] pre-activations: the
inner loop is vectorizable), and a general loop that walks a multi-index
with per-load strides (stride 0 for size-1 dims).
The host (host.py) fills the closure struct and picks the loop; `launch`
runs the kernel over chunks of CHUNK elements, each costing `cost` cycles
(ops.cost is in eighths of a cycle per element), so parallel_for sees the
kernel's measured cycles, the same model as stitch kernels.
"""
from __future__ import annotations

import dataclasses

from ...ir.core import Op, Value
from ...ir.opset import spec
from ...shapes.symbolic import is_static
from . import ops as optable
from .dispatch import emit_launch
from ..index_ops import IndexCtx, emit_index
from ..c_types import c_type
from ..kernel_code import KernelCode, LocalNames, field_index

# Elements per parallel_for unit: one unit of work costs `cost` cycles.
CHUNK = optable.UNITS_PER_CYCLE
# ops.cost units of memory traffic per element: 0.3-0.4 cycles measured for
# one load and one store ((x + 0.5) * 1.5, data in L2).
LOAD_COST = 1
STORE_COST = 2


@dataclasses.dataclass
class Load:
    """A strided read of buffer `source` broadcast into the kernel shape, or
    (view set) a view of it: the kernel's element idx at offset
    view.base + sum idx[d] * view.strides[d], the last stride 1."""
    source: Value
    dims: list[int]          # broadcast_dimensions (operand dim -> out dim)
    view: Op | None = None


def row_view(op: Op, shape: tuple[str, ...], defined: set) -> bool:
    """A view op the loops read as a strided load: of a buffer (not a value
    of the kernel), at the kernel's shape, contiguous along the last dim."""
    return (op.name == "view" and op.operands[0] not in defined and op.result.shape == shape
            and len(shape) > 0 and op.attrs["strides"][-1] == "1")


@dataclasses.dataclass
class KernelInfo:
    name: str
    op: Op
    rank: int
    buffers: list[Value]     # external values read from memory (field p<k>)
    loads: list[Load]        # strided loads (field st<j>)
    cost: int                # cycles per CHUNK elements (ops.cost units per element)
    code: KernelCode | None = None
    locals: dict[str, str] = dataclasses.field(default_factory=dict)  # IR name -> C++
    # Index ops (codegen/index_ops.py): dims the host passes in (field h),
    # whether the kernel needs the multi-index loop, gather error fields.
    hostvals: list = dataclasses.field(default_factory=list)
    needs_idx: bool = False
    uses_gather: bool = False


def _scalar_const(v: Value, consts: dict[Value, Op]) -> str | None:
    c = consts.get(v)
    if c is not None and v.type.rank == 0:
        return optable.literal(c.attrs["value"][0], v.dtype)
    return None


def build_kernel(op: Op, consts: dict[Value, Op]) -> KernelInfo:
    k = op.attrs["kernel"]
    shape = op.results[0].shape
    rank = len(shape)
    info = KernelInfo(f"disc_kernel_{k}", op, rank, [], [], 0)
    defined = {r for o in op.region.ops for r in o.results}
    local = LocalNames()

    def buf(v: Value) -> int:
        return field_index(info.buffers, v)

    # Per region value: its expression in each loop (FLAT, STRIDED, ROWS).
    exprs: dict[Value, tuple[str, str, str]] = {}
    stmts_fast: list[str] = []
    stmts_slow: list[str] = []
    stmts_rows: list[str] = []

    def operand(v: Value) -> tuple[str, str, str]:
        if v in defined:
            return exprs[v]
        lit = _scalar_const(v, consts)
        if lit is not None:
            return lit, lit, lit
        if v.shape != shape:
            raise AssertionError(f"direct read of %{v.name} at a different shape")
        e = f"c.p{buf(v)}[i]"
        return e, e, e

    def scalar_operand(v: Value) -> str:
        if v not in defined and v.type.rank == 0 and _scalar_const(v, consts) is None:
            return f"c.p{buf(v)}[0]"
        return operand(v)[1]

    ictx = IndexCtx(buf, scalar_operand)
    cost = 0
    for inner in op.region.ops:
        res = inner.result
        if row_view(inner, shape, defined):
            j = len(info.loads)
            info.loads.append(Load(inner.operands[0], list(range(rank)), inner))
            p = f"c.p{buf(inner.operands[0])}"
            base = inner.attrs.get("base", "0")
            at = "" if base == "0" else f"{ictx.hv(base)} + "
            exprs[res] = (f"{p}[{at}i]", f"{p}[{at}o{j}]", f"{p}[{at}o{j} + i]")
            cost += LOAD_COST
            continue
        if spec(inner.name).kind == "index":
            t = c_type(res.dtype)
            info.needs_idx = True
            name = local(res)
            index = f"const {t} {name} = {emit_index(inner, ictx)};"
            stmts_slow.append(index)
            stmts_rows.append(index)
            exprs[res] = (name, name, name)
            cost += 2 * CHUNK  # a div/mod of the flat index per dim: a scalar loop
            continue
        if inner.name == "broadcast_in_dim":
            (x,) = inner.operands
            lit = _scalar_const(x, consts)
            if x in defined:
                raise AssertionError("broadcast of a value computed in the same kernel")
            if lit is not None:
                exprs[res] = (lit, lit, lit)
            elif x.type.rank == 0:
                e = f"c.p{buf(x)}[0]"
                exprs[res] = (e, e, e)
            else:
                # load j: flat index, the multi-index offset o<j>, or the
                # row's shift o<j> plus i (every load contiguous along rows)
                j = len(info.loads)
                info.loads.append(Load(x, list(inner.attrs["broadcast_dimensions"])))
                p = f"c.p{buf(x)}"
                exprs[res] = (f"{p}[i]", f"{p}[o{j}]", f"{p}[o{j} + i]")
            continue
        args = [operand(v) for v in inner.operands]
        t = c_type(res.dtype)
        fast, slow, rows = (optable.emit(inner, [a[k] for a in args], t) for k in range(3))
        name = local(res)
        stmts_fast.append(f"const {t} {name} = {fast};")
        stmts_slow.append(f"const {t} {name} = {slow};")
        stmts_rows.append(f"const {t} {name} = {rows};")
        exprs[res] = (name, name, name)
        cost += optable.emitted_cost(inner, [a[0] for a in args], t)
    info.cost = max(cost + LOAD_COST * len(info.buffers) + STORE_COST * len(op.results), 1)
    info.hostvals, info.uses_gather = ictx.hostvals, ictx.uses_gather
    for m, v in enumerate(op.region.outputs):
        f, s, w = operand(v)
        stmts_fast.append(f"c.o{m}[i] = {f};")
        stmts_slow.append(f"c.o{m}[i] = {s};")
        stmts_rows.append(f"c.o{m}[i] = {w};")
    if info.needs_idx:  # host sets fast = false
        stmts_fast = []
    info.code = _render(info, stmts_fast, stmts_slow, stmts_rows)
    info.locals = local.by_ir_name()
    return info


def launch(info: KernelInfo, c: str, n: str) -> list[str]:
    """C++ lines running kernel closure `c` over n > 0 elements, inline or
    split by parallel_for in CHUNK-element units of info.cost cycles."""
    return [f"      {c}.n = {n};",
            *emit_launch(f"({n} + {CHUNK - 1}) / {CHUNK}", str(info.cost),
                         f"{info.name}_chunks", f"&{c}")]


def _render(info: KernelInfo, fast: list[str], slow: list[str], rows: list[str]) -> KernelCode:
    r = info.rank
    fields = [f"  const {c_type(v.dtype)}* p{k};" for k, v in enumerate(info.buffers)]
    fields += [f"  {c_type(v.dtype)}* o{m};" for m, v in enumerate(info.op.results)]
    fields.append(f"  int64_t dims[{max(r, 1)}];")
    fields += [f"  int64_t st{j}[{max(r, 1)}];" for j in range(len(info.loads))]
    if info.hostvals:
        fields.append(f"  int64_t h[{len(info.hostvals)}];")
    if info.uses_gather:
        fields.append("  int64_t bad_pos, bad_val;")
    fields.append("  int64_t n;")
    fields.append("  bool fast;")
    fields.append("  int32_t err;")
    nl = len(info.loads)
    ind = "      "
    lines = ["  int32_t err = 0;",
             "  if (c.fast) {",
             "#pragma GCC ivdep",
             "    for (int64_t i = begin; i < end; ++i) {",
             *[ind + s for s in fast],
             "    }"]
    if rows_always(info):  # the strided loop below would never run
        return _code(fields, lines + _render_rows(info, rows, always=True))
    if r >= 2 and nl and not info.needs_idx:
        lines += _render_rows(info, rows)
    lines += ["  } else {"]
    if r:
        lines += [f"    int64_t idx[{r}];",
                  "    {",
                  "      int64_t rem = begin;",
                  f"      for (int d = {r - 1}; d >= 0; --d) {{ idx[d] = rem % c.dims[d]; "
                  "rem /= c.dims[d]; }",
                  "    }"]
        for j in range(nl):
            lines.append(f"    int64_t o{j} = 0;")
            lines.append(f"    for (int d = 0; d < {r}; ++d) o{j} += idx[d] * c.st{j}[d];")
    if not r and info.needs_idx:
        lines.append("    const int64_t idx[1] = {0};")
    lines += ["    for (int64_t i = begin; i < end; ++i) {", *[ind + s for s in slow]]
    if r:
        lines += [f"      for (int d = {r - 1}; d >= 0; --d) {{",
                  "        ++idx[d];",
                  *[f"        o{j} += c.st{j}[d];" for j in range(nl)],
                  "        if (idx[d] < c.dims[d]) break;",
                  *[f"        o{j} -= c.st{j}[d] * c.dims[d];" for j in range(nl)],
                  "        idx[d] = 0;",
                  "      }"]
    lines += ["    }"]
    return _code(fields, lines)


def _code(fields: list[str], lines: list[str]) -> KernelCode:
    """The kernel from its loops: the end of the range function (a recorded
    error) and the chunked entry launch() runs."""
    tail = ["  }", "  if (err) __atomic_store_n(&c.err, err, __ATOMIC_RELAXED);"]
    return KernelCode(tuple(fields), tuple(lines + tail), CHUNK)


def rows_always(info: KernelInfo) -> bool:
    """Whether the row loop's run-time condition is proven by the shapes: the
    last output dim is static and >= 4, and every strided load reads it from
    its own last dim, static and not 1 (host.py sets that stride to 1).  The
    general strided loop is then dead code, not compiled."""
    r, shape = info.rank, info.op.results[0].shape
    if r < 2 or not info.loads or info.needs_idx:
        return False
    last = shape[-1]
    if not is_static(last) or int(last) < 4:
        return False
    return all(ld.view is not None or (ld.dims and ld.dims[-1] == r - 1
                                       and is_static(ld.source.shape[-1])
                                       and int(ld.source.shape[-1]) != 1)
               for ld in info.loads)


def _render_rows(info: KernelInfo, rows: list[str], always: bool = False) -> list[str]:
    """A loop over rows of the last dim, taken when every strided load walks
    that dim contiguously (bias adds, [B,S,C] + [C]): the inner loop is
    vectorizable like the flat one; outer dims step the per-load offsets.
    always: the shapes prove that condition (rows_always), no test."""
    r, nl = info.rank, len(info.loads)
    contiguous = " && ".join(f"c.st{j}[{r - 1}] == 1" for j in range(nl))
    test = "  } else {" if always else f"  }} else if (c.dims[{r - 1}] >= 4 && {contiguous}) {{"
    step = [f"        for (int d = {r - 2}; d >= 0; --d) {{",
            "          ++idx[d];",
            *[f"          b{j} += c.st{j}[d];" for j in range(nl)],
            "          if (idx[d] < c.dims[d]) break;",
            *[f"          b{j} -= c.st{j}[d] * c.dims[d];" for j in range(nl)],
            "          idx[d] = 0;",
            "        }"]
    return [test,
            f"    int64_t idx[{r - 1}];",
            "    int64_t rem = begin;",
            f"    int64_t j0 = rem % c.dims[{r - 1}];",
            f"    rem /= c.dims[{r - 1}];",
            f"    for (int d = {r - 2}; d >= 0; --d) {{ idx[d] = rem % c.dims[d]; rem /= c.dims[d]; }}",
            *[f"    int64_t b{j} = 0;\n    for (int d = 0; d < {r - 1}; ++d) b{j} += idx[d] * c.st{j}[d];"
              for j in range(nl)],
            "    for (int64_t i0 = begin; i0 < end;) {",
            f"      const int64_t i1 = end - i0 < c.dims[{r - 1}] - j0 ? end : i0 + c.dims[{r - 1}] - j0;",
            *[f"      const int64_t o{j} = b{j} + j0 - i0;" for j in range(nl)],
            "#pragma GCC ivdep",
            "      for (int64_t i = i0; i < i1; ++i) {",
            *["        " + s for s in rows],
            "      }",
            "      i0 = i1;",
            "      j0 = 0;",
            "      if (i0 < end) {",
            *step,
            "      }",
            "    }"]
