"""Shape speculation: a copy of the function in which no symbolic dim
broadcasts, chosen at run time by a guard.

Broadcast-compatible dims (the pairs of each assert_broadcastable and the
parts of each "bcast(a,b)" dim) are equal unless one of them is 1 at run
time.  Fusion must treat [s0,s1,s2] and [s4,s5,bcast(s3,s6)] as different
shapes (materializing values between them), although in almost every call
they are the same.  speculate() merges each such class of dims into one
representative (a static dim when the class has one) and rewrites every
type and dim attribute; the guard is the list of (dim, representative)
equalities over input dims that make the copy exact.  codegen/cpu/source.py
compiles both versions and picks one per call.
"""
from __future__ import annotations

import dataclasses

from ..ir.core import Func, Op, Region, TensorType, Value
from ..shapes.symbolic import (Dim, _key, _mk, bcast_parts, dim_add, dim_floordiv, dim_ifzero,
                               dim_max, dim_min, dim_mul, dim_sub, is_static, parse_dim)

# Attribute keys that hold text, never dims.
_TEXT_KEYS = frozenset({"msg", "node", "op", "kind", "direction", "ret_names"})
_REBUILD = {"mul": dim_mul, "add": dim_add, "sub": dim_sub, "floordiv": dim_floordiv,
            "max": dim_max, "min": dim_min, "ifzero": dim_ifzero}


class _Classes:
    """Union-find over atomic dims (symbols, static dims, derived dims)."""

    def __init__(self) -> None:
        self.parent: dict[Dim, Dim] = {}
        self.memo: dict[Dim, Dim] = {}   # _rewrite_dim results, once merged

    def find(self, d: Dim) -> Dim:
        while self.parent.get(d, d) != d:
            d = self.parent[d]
        return d

    def union(self, a: Dim, b: Dim) -> bool:
        """Merge; False when the classes hold two different static dims."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        if is_static(ra) and is_static(rb):
            return False
        if _key(rb) < _key(ra):
            ra, rb = rb, ra
        self.parent[rb] = ra
        return True


def _merge_pairs(func: Func) -> _Classes | None:
    cls = _Classes()
    pairs: list[tuple[Dim, Dim]] = []
    dims: set[Dim] = set()
    for op in func.walk():
        for r in op.results:
            dims.update(r.shape)
        if op.name == "assert_broadcastable":
            lhs, rhs = op.attrs["lhs"], op.attrs["rhs"]
            pairs += [(a, b) for a, b in zip(reversed(lhs), reversed(rhs))]
    for d in dims:
        parts = bcast_parts(d)
        pairs += [(parts[0], p) for p in parts[1:]]
    merged = False
    for a, b in pairs:
        atoms = [x for x in bcast_parts(a) + bcast_parts(b) if x != "1"]
        # only input symbols and static dims: the guard checks input dims
        if any(parse_dim(x)[0] not in ("sym", "const") for x in atoms):
            continue
        for x in atoms[1:]:
            if cls.find(x) == cls.find(atoms[0]):
                continue
            if not cls.union(atoms[0], x):
                return None
            merged = True
    return cls if merged else None


def _rewrite_dim(d: Dim, cls: _Classes) -> Dim:
    """d with every class replaced by its representative; memoized per
    class set, as a dim is a DAG whose parts are shared (symbolic.py)."""
    if d not in cls.memo:
        cls.memo[d] = _rewrite_uncached(d, cls)
    return cls.memo[d]


def _rewrite_uncached(d: Dim, cls: _Classes) -> Dim:
    p = parse_dim(d)
    if p[0] == "const":
        return d
    if p[0] == "sym":
        return cls.find(d)
    if p[0] == "bcast":
        parts = {_rewrite_dim(x, cls) for x in p[1]} - {"1"}
        return parts.pop() if len(parts) == 1 else \
            _mk("bcast", sorted(parts, key=_key)) if parts else "1"
    if p[1] in _REBUILD:
        return cls.find(_REBUILD[p[1]](*[_rewrite_dim(x, cls) for x in p[2]]))
    return cls.find(_mk(p[1], p[2]))


def _rewrite_attr(v, cls: _Classes):
    if isinstance(v, str):
        try:
            return _rewrite_dim(v, cls)
        except ValueError:
            return v
    if isinstance(v, list):
        return [_rewrite_attr(x, cls) for x in v]
    if isinstance(v, dict):
        return {k: x if k in _TEXT_KEYS else _rewrite_attr(x, cls) for k, x in v.items()}
    return v


def speculate(func: Func) -> tuple[Func, list[tuple[Dim, Dim]]] | None:
    """(copy without symbolic broadcasting, guard) or None when every
    broadcast is already resolved statically."""
    cls = _merge_pairs(func)
    if cls is None:
        return None
    input_syms = {d for a in func.args for d in a.shape if not is_static(d)}
    guard = sorted({(d, cls.find(d)) for d in input_syms if cls.find(d) != d})
    if not guard:
        return None
    vals: dict[Value, Value] = {}

    def val(v: Value) -> Value:
        if v not in vals:
            vals[v] = Value(v.name, TensorType(v.dtype, tuple(_rewrite_dim(d, cls)
                                                             for d in v.shape)))
        return vals[v]

    def op_(o: Op) -> Op:
        region = None if o.region is None else \
            Region([op_(x) for x in o.region.ops], [val(x) for x in o.region.outputs])
        return Op(o.name, [val(x) for x in o.operands], [val(r) for r in o.results],
                  _rewrite_attr(dict(o.attrs), cls), region)

    ops = [op_(o) for o in func.ops]
    # the broadcasts made trivial are dropped by canonicalize; its checks too
    ops = [o for o in ops if not (o.name == "assert_broadcastable" and _trivial(o))]
    spec = dataclasses.replace(func, args=[val(a) for a in func.args], ops=ops,
                               rets=[val(v) for v in func.rets],
                               attrs=dict(func.attrs, speculated=[list(g) for g in guard]))
    return spec, guard


def _trivial(op: Op) -> bool:
    lhs, rhs = op.attrs["lhs"], op.attrs["rhs"]
    n = min(len(lhs), len(rhs))
    return lhs[len(lhs) - n:] == rhs[len(rhs) - n:]
