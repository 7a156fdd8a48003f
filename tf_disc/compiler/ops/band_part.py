"""MatrixBandPart (tf.linalg.band_part; Keras' causal masks are
band_part(ones, -1, 0)): one select against row/column iotas that fuses with
its producers and consumers.

num_lower/num_upper are const inputs: graph constants, or runtime scalars
whose values the kernel puts in its cache key (one compile per value pair).
TF's checks (num_lower <= rows, num_upper <= cols, non-negative values only)
run against the dynamic dims with TF's InvalidArgument messages."""
from __future__ import annotations

from .. import dtypes
from ..dtypes import ALL, INTS
from ..errors import ShapeError
from ..ir.core import Op
from ..shapes.symbolic import dim_min
from .hostvals import const_ints
from .rule import OpRule

_LIMIT_MSG = "num_{0} must be negative or less or equal to number of {1} ({{0}}) got: {{1}}"


def _band_limit(b, node, v, which: str, dim: str, dims_name: str) -> int:
    """The constant scalar num_lower/num_upper, checked against its dim."""
    if v.type.rank != 0:
        raise ShapeError(f"num_{which} must be scalar, got shape {list(v.shape)} "
                         f"(node '{node.name}')")
    (k,) = const_ints(b, v, node, f"num_{which}")
    if k >= 0 and not b.env.known_equal(dim_min(str(k), dim), str(k)):
        # k <= dim  <=>  min(k, dim) == k; on failure min(k, dim) is the dim.
        b.ops.append(Op("assert_dim_eq", [], [], {
            "node": node.name, "op": node.op, "msg": _LIMIT_MSG.format(which, dims_name),
            "lhs": [dim_min(str(k), dim)], "rhs": [str(k)]}))
    return k


def lower_matrix_band_part(b, node, xs):
    x, lo, up = xs
    r = x.type.rank
    if r < 2:
        raise ShapeError(f"input must be at least 2-dim, received shape: {list(x.shape)} "
                         f"(node '{node.name}')")
    rows, cols = x.shape[-2], x.shape[-1]
    lower = _band_limit(b, node, lo, "lower", rows, "rows")
    upper = _band_limit(b, node, up, "upper", cols, "columns")
    if lower < 0 and upper < 0:
        return [x]
    i = b.emit("iota", [], dtypes.I64, x.shape, dimension=r - 2)
    j = b.emit("iota", [], dtypes.I64, x.shape, dimension=r - 1)
    keep = None
    for a, c, k in ((i, j, lower), (j, i, upper)):
        if k < 0:
            continue
        # a - c <= k: below (lower) / above (upper) the diagonal by at most k
        within = b.elementwise("compare", b.elementwise("subtract", a, c),
                               b.scalar_like(k, a), direction="LE")
        keep = within if keep is None else b.elementwise("and", keep, within)
    return [b.elementwise("select", keep, x, b.scalar_like(0, x), dtype=x.dtype)]


RULES = [
    OpRule("MatrixBandPart", lower_matrix_band_part, {"T": ALL, "Tindex": INTS},
           fusion="index", const_inputs=(1, 2)),
]
