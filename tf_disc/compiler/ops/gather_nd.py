"""GatherNd: params[indices[..., :]] with K = indices.shape[-1] leading
params dims indexed.  The output rank depends on K, which a rank-keyed
executable cannot see: the optimizer records it from Grappler's static shape
inference in the `_disc_index_depth` attr (grappler/static_facts.cc) and
leaves GatherNd in TF when it is unknown.  Lowered as one `gather` on params
flattened over its first K dims, at a linear index computed elementwise;
an index outside params' dims becomes -1, which gather reports as TF's
InvalidArgument."""
from __future__ import annotations

from .. import dtypes
from ..dtypes import ALL, INTS
from ..errors import ShapeError, Unsupported
from ..shapes.symbolic import dim_mul
from .hostvals import make_host
from .rule import OpRule
from .shape_ops import _assert_eq, _reshape, _strides, _view

DEPTH_ATTR = "_disc_index_depth"


def lower_gather_nd(b, node, xs):
    params, ind = xs
    if node.attrs.get(DEPTH_ATTR) is None:
        raise Unsupported(f"node '{node.name}' (GatherNd): index depth unknown before run time")
    k, ri, rp = int(node.attrs[DEPTH_ATTR]), ind.type.rank, params.type.rank
    if ri < 1 or k > rp:
        raise ShapeError(f"indices.shape[-1] must be <= params.rank, but saw indices shape "
                         f"rank {ri}, depth {k} and params rank {rp} (node '{node.name}')")
    _assert_eq(b, [ind.shape[-1]], [str(k)], node,
               f"index depth {k} recorded by the optimizer, got {{0}}")
    batch = ind.shape[:-1]
    ist = _strides(batch + (str(k),))[:-1]
    i64 = dtypes.I64
    lin = b.broadcast_to(b.constant(0, i64), batch)
    bad = b.broadcast_to(b.constant(False, dtypes.BOOL), batch)
    for j in range(k):
        c = b.convert(_view(b, ind, batch, ist, str(j)), i64)
        dim = b.broadcast_to(make_host(b, [params.shape[j]], i64, scalar=True), batch)
        lin = b.elementwise("add", b.elementwise("multiply", lin, dim), c)
        out_of_range = b.elementwise("or", b.elementwise(
            "compare", c, b.scalar_like(0, c), direction="LT"),
            b.elementwise("compare", c, dim, direction="GE"))
        bad = b.elementwise("or", bad, out_of_range)
    lin = b.elementwise("select", bad, b.scalar_like(-1, lin), lin, dtype=i64)
    flat = _reshape(b, params, (dim_mul(*params.shape[:k]) if k else "1",) + params.shape[k:])
    return [b.emit("gather", [flat, lin], params.dtype, batch + params.shape[k:], axis=0)]


def _rank(env, shapes, attrs):
    k = attrs.get(DEPTH_ATTR)
    return [None if k is None else ("?",) * (len(shapes[1]) - 1 + len(shapes[0]) - int(k))]


RULES = [
    OpRule("GatherNd", lower_gather_nd, {"Tparams": ALL, "Tindices": INTS}, fusion="index",
           shape_rule=_rank, dtype_rule=lambda dts, attrs: [dts[0]]),
]
