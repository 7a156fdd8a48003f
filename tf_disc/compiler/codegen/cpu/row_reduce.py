"""Row reductions inside a stitch kernel (stitch.py): one row's reduction
in vector registers of independent lanes, folded at the end in log2(lanes)
shuffles (the fold is on each row's critical path); float sums in float
lanes folded into double per block of SUM_BLOCK elements."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ...ir.core import Op, Value
from ..c_types import c_type
from .reduce import _combine, _init

if TYPE_CHECKING:
    from .stitch import _Emitter


def lane_combine(kind: str, acc: str, v: str) -> str:
    """reduce.py's combine, branch-free where it has a branch (so the lane
    loop vectorizes: a conditional store to acc[u] does not)."""
    if kind == "max_ignore_nan":   # NaN never wins (Eigen's MaxReducer)
        return f"{acc} = {v} > {acc} ? {v} : {acc};"
    return _combine(kind, acc, v)


# Reductions whose lane combine (lane_combine) is also valid on GCC vector
# types, for float and double accumulators.
VECTOR_KINDS = ("sum", "prod", "max_ignore_nan")


def row_reduce(o: Op, em: "_Emitter", scratch: list[Value], declare: bool = True,
                vec: Callable[[str, str, str], str] | None = None,
                scalar: str | None = None) -> list[str]:
    """Reduction of one row into the per-row value o.result: independent
    accumulators (one vector register of lanes), combined at the end.
    declare=False assigns a result declared by the caller.  A float sum of
    a recomputed input (_recomputed) reads it through vec(vector type,
    load function, index) and, in its scalar tail, scalar."""
    x, r = o.operands[0], o.result
    kind, t = o.attrs["kind"], c_type(x.dtype)
    em.expr[r] = em.local(r)
    a = f"a_{em.local(r)}"
    if t == "float" and kind == "sum" and vec is not None:   # x has no row of its own
        return blocked_float_sum(a, "", em.local(r), c_type(r.dtype), declare,
                                  lambda j: vec(f"{a}_v", f"{a}_ld", j), scalar)
    src = f"s{scratch.index(x)}" if x in em.region_vals else f"(c.p{em.buf(x)} + row)"
    if t == "float" and kind == "sum":
        return blocked_float_sum(a, src, em.local(r), c_type(r.dtype), declare)
    at = "double" if (t == "float" and kind in ("sum", "prod")) else t
    lanes = 8 if at in ("double", "int64_t") else 16
    if at in ("float", "double") and kind in VECTOR_KINDS:
        main = vector_lanes(kind, t, at, lanes, a, src)   # lanes folded into a[0]
        fold = []
    else:
        main = [f"  for (; j + {lanes} <= R; j += {lanes})",
                f"    for (int u = 0; u < {lanes}; ++u) "
                f"{{ {lane_combine(kind, f'{a}[u]', f'{at}({src}[j + u])')} }}"]
        fold = [f"  for (int u = 1; u < {lanes}; ++u) "
                f"{{ {lane_combine(kind, f'{a}[0]', f'{a}[u]')} }}"]
    return [f"{at} {a}[{lanes}];",
            f"for (int u = 0; u < {lanes}; ++u) {a}[u] = {_init(kind, at)};",
            "{",
            "  int64_t j = 0;",
            *main,
            f"  for (; j < R; ++j) {{ {lane_combine(kind, f'{a}[0]', f'{at}({src}[j])')} }}",
            *fold,
            "}",
            f"{declared(c_type(r.dtype), declare)}{em.local(r)} = {c_type(r.dtype)}({a}[0]);"]


def declared(t: str, declare: bool) -> str:
    """The start of a reduction's result statement: a declaration or not."""
    return f"const {t} " if declare else ""


# Elements per float block of blocked_float_sum: each of its 64 float lanes
# adds at most 16 of them before the block total goes into double.
SUM_BLOCK = 1024


def blocked_float_sum(a: str, src: str, name: str, rt: str, declare: bool = True,
                       lanes: Callable[[str], str] | None = None,
                       scalar: str | None = None) -> list[str]:
    """A float row sum as 64 float lanes (four 16-float registers) per block
    of SUM_BLOCK elements, each block folded into 8 double lanes: one vaddps
    per 16 elements instead of two vcvtps2pd + two vaddpd (12% of the
    softmax kernel), while a lane still rounds at most 16 additions in
    float (TF's own f32 sums accumulate in float).  The summands are src's
    elements, or lanes(index) (16 at once, {a}_ld loads a vector) and
    scalar (element j) for an input computed here instead of read."""
    vt, dt = f"{a}_v", f"{a}_d"

    def step(k: int) -> str:
        off = f" + {16 * k}" if k else ""
        if lanes is not None:
            return f"{{ const {vt} x = {lanes('j' + off)}; {a}{k} += x; }}"
        return f"{{ {vt} x; std::memcpy(&x, {src} + j{off}, sizeof x); {a}{k} += x; }}"
    load = [] if lanes is None else [
        f"const auto {a}_ld = [](const float* p) {{ {vt} x; std::memcpy(&x, p, sizeof x); return x; }};"]
    return [f"double {a}_s = 0;",
            "{",
            f"typedef float {vt} __attribute__((vector_size(16 * sizeof(float))));",
            f"typedef double {dt} __attribute__((vector_size(8 * sizeof(double))));",
            *load,
            f"{dt} {a}_t = {dt}{{}};",
            "int64_t j = 0;",
            "while (j + 16 <= R) {",
            f"  const int64_t e = R - j > {SUM_BLOCK} ? j + {SUM_BLOCK} : R;",
            f"  {vt} {', '.join(f'{a}{k} = {vt}{{}}' for k in range(4))};",
            "  for (; j + 64 <= e; j += 64) {",
            *[f"    {step(k)}" for k in range(4)],
            "  }",
            f"  for (; j + 16 <= e; j += 16) {step(0)}",
            f"  {a}0 += {a}1; {a}2 += {a}3; {a}0 += {a}2;",
            f"  {a}_t += __builtin_convertvector(__builtin_shufflevector({a}0, {a}0, "
            f"0, 1, 2, 3, 4, 5, 6, 7), {dt});",
            f"  {a}_t += __builtin_convertvector(__builtin_shufflevector({a}0, {a}0, "
            f"8, 9, 10, 11, 12, 13, 14, 15), {dt});",
            "}",
            *tree_fold("sum", f"{a}_t", 8),
            f"{a}_s += {a}_t[0];",
            f"for (; j < R; ++j) {a}_s += double({scalar if lanes is not None else f'{src}[j]'});",
            "}",
            f"{declared(rt, declare)}{name} = {rt}({a}_s);"]


def vector_lanes(kind: str, t: str, at: str, lanes: int, a: str, src: str) -> list[str]:
    """The lane loop on GCC vector types: four accumulator registers (one is
    bound by the add latency), then one, folded into the lanes array a.
    GCC's SLP vectorizer leaves the scalar-lane form of a max (a select)
    as 16 vmaxss."""
    vt, lt = f"{a}_v", f"{a}_l"
    conv = (lambda v: v) if t == at else (lambda v: f"__builtin_convertvector({v}, {vt})")
    acc = [f"{a}{k}" for k in range(4)]

    def step(k: int, off: str) -> list[str]:
        return [f"    {{ {lt} x; std::memcpy(&x, {src} + j{off}, sizeof x); "
                f"const {vt} v = {conv('x')}; {lane_combine(kind, acc[k], 'v')} }}"]
    return [f"  typedef {at} {vt} __attribute__((vector_size({lanes} * sizeof({at}))));",
            f"  typedef {t} {lt} __attribute__((vector_size({lanes} * sizeof({t}))));",
            f"  {vt} {', '.join(f'{v} = {vt}{{}} + {a}[0]' for v in acc)};",
            f"  for (; j + {4 * lanes} <= R; j += {4 * lanes}) {{",
            *[ln for k in range(4) for ln in step(k, f" + {k * lanes}" if k else "")],
            "  }",
            f"  for (; j + {lanes} <= R; j += {lanes}) {{",
            *step(0, ""),
            "  }",
            *[f"  {lane_combine(kind, acc[0], v)}" for v in acc[1:]],
            *["  " + x for x in tree_fold(kind, acc[0], lanes)],
            f"  std::memcpy({a}, &{acc[0]}, sizeof {a});"]


def tree_fold(kind: str, v: str, lanes: int) -> list[str]:
    """Combine the lanes of vector v into every lane in log2(lanes) shuffle
    steps: the end of a row reduction is on each row's critical path
    (the next phase waits for it), and 15 dependent scalar vmaxss took 3.5%
    of the softmax kernel."""
    out, half = [], lanes // 2
    while half:
        perm = ", ".join(str(u ^ half) for u in range(lanes))
        out.append(f"{{ const auto q = __builtin_shufflevector({v}, {v}, {perm}); "
                   f"{lane_combine(kind, v, 'q')} }}")
        half //= 2
    return out
