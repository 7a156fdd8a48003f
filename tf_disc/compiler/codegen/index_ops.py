"""C++ for the "index" IR ops (view, reshape, tile, pad, concatenate,
gather, iota) inside a loop kernel.  Each returns one C++ expression for the
element at the kernel's multi-index `idx[]` (flat index `i`).  Operands are
buffers (the fusion pass materializes them); dims and offsets the host
computes are closure fields (`c.h[n]`, filled by host.py)."""
from __future__ import annotations

from ..ir.core import Op, Value
from ..shapes.symbolic import dim_mul, is_static
from .c_types import c_type

GATHER_ERROR = 3  # kernel err code: index out of range (bad_pos/bad_val set)


class IndexCtx:
    """What an index op needs from its kernel (kernel.py implements it)."""

    def __init__(self, buf, operand) -> None:
        self.buf = buf            # Value -> buffer field number
        self.operand = operand    # Value -> element expression (elementwise read)
        self.hostvals: list[str] = []
        self.uses_gather = False

    def hv(self, d: str) -> str:
        """C++ expression of a dim string inside the kernel."""
        if is_static(d):
            return f"int64_t({d})"
        if d not in self.hostvals:
            self.hostvals.append(d)
        return f"c.h[{self.hostvals.index(d)}]"


def _strides(shape: tuple) -> list[str]:
    return [dim_mul(*shape[k + 1:]) if shape[k + 1:] else "1" for k in range(len(shape))]


def _offset(ctx: IndexCtx, terms: list[tuple[str, str]]) -> str:
    """sum of index_expr * stride (stride dim strings)."""
    parts = []
    for e, st in terms:
        if st == "0":
            continue
        parts.append(e if st == "1" else f"{e} * {ctx.hv(st)}")
    return " + ".join(parts) or "0"


def _load(ctx: IndexCtx, x: Value, off: str) -> str:
    return f"c.p{ctx.buf(x)}[{off}]"


def emit_index(op: Op, ctx: IndexCtx) -> str:
    res = op.result
    a = op.attrs
    if op.name == "view":
        (x,) = op.operands
        terms = [(f"idx[{d}]", s) for d, s in enumerate(a["strides"])]
        off = _offset(ctx, terms)
        if a.get("base", "0") != "0":
            off = f"{ctx.hv(a['base'])} + {off}"
        return _load(ctx, x, off)
    if op.name == "reshape":
        return _load(ctx, op.operands[0], "i")
    if op.name == "iota":
        return f"{c_type(res.dtype)}(idx[{a['dimension']}])"
    if op.name == "tile":
        (x,) = op.operands
        st = _strides(x.shape)
        terms = [(f"(idx[{d}] % {ctx.hv(x.shape[d])})" if x.shape[d] != "1" else "0", st[d])
                 for d in range(x.type.rank)]
        return _load(ctx, x, _offset(ctx, [t for t in terms if t[0] != "0"]))
    if op.name == "pad":
        x, pv = op.operands
        st = _strides(x.shape)
        conds, terms = [], []
        for d, lo in enumerate(a["lo"]):
            t = f"(idx[{d}] - {ctx.hv(lo)})" if lo != "0" else f"idx[{d}]"
            conds.append(f"{t} >= 0 && {t} < {ctx.hv(x.shape[d])}")
            terms.append((t, st[d]))
        cond = " && ".join(conds) or "true"
        return f"(({cond}) ? {_load(ctx, x, _offset(ctx, terms))} : {ctx.operand(pv)})"
    if op.name == "concatenate":
        ax = a["dimension"]
        expr, start = None, "0"
        pieces = []
        for x in op.operands:
            st = _strides(x.shape)
            t = f"(idx[{ax}] - {ctx.hv(start)})" if start != "0" else f"idx[{ax}]"
            terms = [(t if d == ax else f"idx[{d}]", st[d]) for d in range(x.type.rank)]
            from ..shapes.symbolic import dim_add
            end = dim_add(start, x.shape[ax])
            pieces.append((end, _load(ctx, x, _offset(ctx, terms))))
            start = end
        expr = pieces[-1][1]
        for end, ld in reversed(pieces[:-1]):
            expr = f"(idx[{ax}] < {ctx.hv(end)} ? {ld} : {expr})"
        return expr
    if op.name == "gather":
        params, ind = op.operands
        ax, ri = a["axis"], ind.type.rank
        pst, ist = _strides(params.shape), _strides(ind.shape)
        ioff = _offset(ctx, [(f"idx[{ax + k}]", ist[k]) for k in range(ri)])
        n = ctx.hv(params.shape[ax])
        ctx.uses_gather = ctx.uses_gather or (ind.shape, params.shape[ax])
        terms = [(f"idx[{d}]", pst[d]) for d in range(ax)]
        terms.append(("gi", pst[ax]))
        terms += [(f"idx[{ri + d - 1}]", pst[d]) for d in range(ax + 1, params.type.rank)]
        # One statement-expression: read the index, check it, load.
        return (f"([&]() {{ const int64_t gp = {ioff}; const int64_t gi = int64_t("
                f"{_load(ctx, ind, 'gp')}); if (gi < 0 || gi >= {n}) {{ err = {GATHER_ERROR}; "
                f"c.bad_pos = gp; c.bad_val = gi; return {c_type(res.dtype)}(0); }} "
                f"return {_load(ctx, params, _offset(ctx, terms))}; }}())")
    raise NotImplementedError(f"no C++ for index op {op.name}")
