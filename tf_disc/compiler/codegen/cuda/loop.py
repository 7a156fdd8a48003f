"""One fusion op -> one CUDA loop kernel over its symbolic output shape,
in up to four __global__ variants sharing one argument struct; the host
(host.py) picks one per call from the run-time dims and pointers:

  _flat     grid-stride loop over the flat index (int64), every load read at
            the element's own position (no load broadcasts this call);
  _flat32   the same with an int32 index (n plus the grid's stride < 2^31):
            cheaper index arithmetic;
  _vec      the flat loop over groups of VEC elements (16 bytes of the widest
            element type), each buffer read and written with one vector
            access; taken when n % VEC == 0 and every buffer it reads or
            writes is 16-byte aligned (a slice's view may not be);
  _strided  a multi-index per element and per-load strides (0 for a
            broadcast dim): broadcasts and index ops (views, concat, pad).
"""
from __future__ import annotations

import dataclasses

from ...ir.core import Op, Value
from ...ir.opset import spec
from ..index_ops import IndexCtx, emit_index
from ..kernel_code import LocalNames, field_index
from .device_code import DeviceKernelCode, Field
from .ops import cuda_literal, cuda_type, emit_cuda

MODES = ("flat", "vec", "strided")
VECTOR_BYTES = 16
GRID_STRIDE = ["  const int64_t stride = int64_t(gridDim.x) * blockDim.x;",
               "  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;"]


@dataclasses.dataclass
class Load:
    """A strided read of buffer `source` broadcast into the kernel shape."""
    source: Value
    dims: list[int]          # broadcast_dimensions (operand dim -> out dim)
    buffer: int


@dataclasses.dataclass
class LoopKernel:
    name: str
    op: Op
    rank: int
    buffers: list[Value] = dataclasses.field(default_factory=list)    # field p<k>
    loads: list[Load] = dataclasses.field(default_factory=list)       # field st<j>
    flat_reads: list[int] = dataclasses.field(default_factory=list)   # buffers read at i
    scalars: list[Value] = dataclasses.field(default_factory=list)    # field s<k>, by value
    hostvals: list[str] = dataclasses.field(default_factory=list)     # field h
    needs_idx: bool = False
    vec: int = 1
    code: DeviceKernelCode | None = None

    def variants(self) -> tuple[str, ...]:
        return self.code.suffixes()


def scalar_literal(v: Value, consts: dict[Value, Op]) -> str | None:
    c = consts.get(v)
    if c is not None and v.type.rank == 0:
        return cuda_literal(c.attrs["value"][0], v.dtype)
    return None


def host_scalar(v: Value, scalars: list[Value]) -> str:
    """A rank-0 host value (a shape tensor) passed by value: field s<k>."""
    return f"{cuda_type(v.dtype)}(c.s{field_index(scalars, v)})"


def scalar_fields(scalars: list[Value]) -> list[Field]:
    return [Field("double" if v.dtype.is_float else "int64_t", f"s{k}")
            for k, v in enumerate(scalars)]


def read_only(ptr: str, dtype) -> str:
    """A load through the read-only data cache (bool has no __ldg)."""
    return f"*({ptr})" if dtype.is_bool else f"__ldg({ptr})"


def build_loop_kernel(op: Op, consts: dict[Value, Op], host_scalars: set[Value],
                      prefix: str = "") -> LoopKernel:
    """The kernel of fusion op; consts: constants (scalars become literals),
    host_scalars: rank-0 host values (passed by value); prefix: of its name
    (a function's general version, source.py)."""
    shape = op.results[0].shape
    info = LoopKernel(f"disc_{prefix}kernel_{op.attrs['kernel']}", op, len(shape))
    defined = {r for o in op.region.ops for r in o.results}
    local = LocalNames()

    def buf(v: Value) -> int:
        return field_index(info.buffers, v)

    def flat(v: Value) -> dict[str, str]:
        k = buf(v)
        if k not in info.flat_reads:
            info.flat_reads.append(k)
        e = read_only(f"c.p{k} + i", v.dtype)
        return {"flat": e, "vec": f"x{k}.v[u]", "strided": e}

    exprs: dict[Value, dict[str, str]] = {}
    stmts: dict[str, list[str]] = {m: [] for m in MODES}

    def operand(v: Value) -> dict[str, str]:
        if v in defined:
            return exprs[v]
        lit = scalar_literal(v, consts)
        if lit is not None:
            return dict.fromkeys(MODES, lit)
        if v in host_scalars:
            return dict.fromkeys(MODES, host_scalar(v, info.scalars))
        if v.type.rank == 0:
            return dict.fromkeys(MODES, read_only(f"c.p{buf(v)}", v.dtype))
        if v.shape != shape:
            raise AssertionError(f"direct read of %{v.name} at a different shape")
        return flat(v)

    def scalar_operand(v: Value) -> str:
        return operand(v)["strided"]

    ictx = IndexCtx(buf, scalar_operand)
    for inner in op.region.ops:
        res = inner.result
        t = cuda_type(res.dtype)
        if spec(inner.name).kind == "index":
            info.needs_idx = True
            name = local(res)
            stmts["strided"].append(f"const {t} {name} = {emit_index(inner, ictx)};")
            exprs[res] = dict.fromkeys(MODES, name)
            continue
        if inner.name == "broadcast_in_dim":
            (x,) = inner.operands
            if x in defined:
                raise AssertionError("broadcast of a value computed in the same kernel")
            if x.type.rank == 0:
                exprs[res] = operand(x)
                continue
            j = len(info.loads)
            e = flat(x)
            info.loads.append(Load(x, list(inner.attrs["broadcast_dimensions"]), buf(x)))
            exprs[res] = dict(e, strided=read_only(f"c.p{buf(x)} + o{j}", x.dtype))
            continue
        args = [operand(v) for v in inner.operands]
        name = local(res)
        for m in MODES:
            stmts[m].append(f"const {t} {name} = {emit_cuda(inner, [a[m] for a in args], t)};")
        exprs[res] = dict.fromkeys(MODES, name)
    info.hostvals = ictx.hostvals
    if ictx.uses_gather:
        raise AssertionError("gather is not generated for CUDA (target/cuda.py refuses it)")
    outs = [operand(v) for v in op.region.outputs]
    widest = max(v.dtype.itemsize for v in [*info.buffers, *op.results])
    info.vec = VECTOR_BYTES // widest
    info.code = _render(info, stmts, outs)
    return info


def _fields(info: LoopKernel) -> tuple[Field, ...]:
    r = max(info.rank, 1)
    f = [Field(f"const {cuda_type(v.dtype)}*", f"p{k}") for k, v in enumerate(info.buffers)]
    f += [Field(f"{cuda_type(v.dtype)}*", f"o{m}") for m, v in enumerate(info.op.results)]
    f.append(Field("int64_t", "dims", r))
    f += [Field("int64_t", f"st{j}", r) for j in range(len(info.loads))]
    if info.hostvals:
        f.append(Field("int64_t", "h", len(info.hostvals)))
    f += scalar_fields(info.scalars)
    f.append(Field("int64_t", "n"))
    return tuple(f)


def _stores(outs: list[dict[str, str]], mode: str) -> list[str]:
    return [f"    c.o{m}[i] = {e[mode]};" for m, e in enumerate(outs)]


def _render(info: LoopKernel, stmts: dict[str, list[str]],
            outs: list[dict[str, str]]) -> DeviceKernelCode:
    variants = []
    if not info.needs_idx:
        body = [*("    " + s for s in stmts["flat"]), *_stores(outs, "flat")]
        variants.append(("_flat", (*GRID_STRIDE,
                                   "  for (int64_t i = first; i < c.n; i += stride) {",
                                   *body, "  }")))
        variants.append(("_flat32", (
            "  const int n = int(c.n), stride = int(gridDim.x * blockDim.x);",
            "  for (int i = int(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += stride) {",
            *body, "  }")))
        if info.rank:
            variants.append(("_vec", _vec_body(info, stmts["vec"], outs)))
    if info.needs_idx or info.loads:
        variants.append(("_strided", _strided_body(info, stmts["strided"], outs)))
    return DeviceKernelCode(_fields(info), tuple(variants))


def _vec_body(info: LoopKernel, stmts: list[str], outs: list[dict[str, str]]) -> tuple[str, ...]:
    n = info.vec
    loads = [f"    const disc_vec<{cuda_type(info.buffers[k].dtype)}, {n}> x{k} = "
             f"disc_load_vec<{n}>(c.p{k}, q);" for k in sorted(info.flat_reads)]
    results = [f"    disc_vec<{cuda_type(v.dtype)}, {n}> y{m};"
               for m, v in enumerate(info.op.results)]
    return (*GRID_STRIDE,
            f"  const int64_t nq = c.n / {n};",
            "  for (int64_t q = first; q < nq; q += stride) {",
            *loads, *results,
            "#pragma unroll",
            f"    for (int u = 0; u < {n}; ++u) {{",
            *("      " + s for s in stmts),
            *(f"      y{m}.v[u] = {e['vec']};" for m, e in enumerate(outs)),
            "    }",
            *(f"    disc_store_vec<{n}>(c.o{m}, q, y{m});" for m in range(len(outs))),
            "  }")


def _strided_body(info: LoopKernel, stmts: list[str],
                  outs: list[dict[str, str]]) -> tuple[str, ...]:
    r, nl = info.rank, len(info.loads)
    index = []
    if r:
        index = [f"    int64_t idx[{r}];",
                 "    int64_t rem = i;",
                 *(f"    int64_t o{j} = 0;" for j in range(nl)),
                 "#pragma unroll",
                 f"    for (int d = {r - 1}; d >= 0; --d) {{",
                 "      idx[d] = rem % c.dims[d];",
                 "      rem /= c.dims[d];",
                 *(f"      o{j} += idx[d] * c.st{j}[d];" for j in range(nl)),
                 "    }"]
    elif info.needs_idx:
        index = ["    const int64_t idx[1] = {0};"]
    return (*GRID_STRIDE,
            "  for (int64_t i = first; i < c.n; i += stride) {",
            *index, *("    " + s for s in stmts), *_stores(outs, "strided"), "  }")
