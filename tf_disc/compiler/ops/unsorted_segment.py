"""UnsortedSegmentSum: out[ids[j]] += data[j] over num_segments zeroed rows
(negative ids dropped), the op Keras optimizers use to sum an embedding's
sparse gradient rows per unique id (num_segments = the Unique count, a
shape read at run time).  The `segment_sum` library op checks ids as TF
does (codegen/cpu/scatter.py)."""
from __future__ import annotations

from ..dtypes import INTS, NUMERIC
from ..errors import ShapeError, Unsupported
from ..shapes.symbolic import dim_max, is_static, known_nonneg
from .hostvals import host_dims
from .rule import OpRule
from .segment import _assert
from .shape_ops import _assert_eq


def lower_unsorted_segment_sum(b, node, xs):
    data, seg, num = xs
    r = seg.type.rank
    if data.type.rank < r:
        raise ShapeError(f"data has rank {data.type.rank} below segment_ids' {r} "
                         f"(node '{node.name}', op {node.op})")
    n = (host_dims(b, num) or [None])[0] if num.type.rank == 0 else None
    if n is None:
        raise Unsupported(f"node '{node.name}' ({node.op}): num_segments is not computable")
    _assert_eq(b, list(data.shape[:r]), list(seg.shape), node,
               "data.shape = {0} does not start with segment_ids.shape = {1}",
               data.shape, seg.shape)
    if is_static(n) and int(n) < 0:
        raise ShapeError(f"Input num_segments == {n} must not be negative. (node '{node.name}', "
                         f"op {node.op})")
    if not known_nonneg(n):
        _assert(b, dim_max(n, "0"), n, node, "Input num_segments == {1} must not be negative.")
    return [b.emit("segment_sum", [seg, data], data.dtype, (n,) + tuple(data.shape[r:]),
                   node=node.name, op=node.op)]


def _shape(env, shapes, attrs):
    return [("?",) * (len(shapes[0]) - len(shapes[1]) + 1)]


RULES = [
    OpRule("UnsortedSegmentSum", lower_unsorted_segment_sum,
           {"T": NUMERIC, "Tindices": INTS, "Tnumsegments": INTS}, shape_rule=_shape,
           fusion="library", value_inputs=(2,)),
]
