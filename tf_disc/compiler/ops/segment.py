"""SparseSegmentSum/Mean/SqrtN (and ...WithNumSegments): gather rows of
data at `indices`, then reduce runs of equal sorted `segment_ids`.

The output's first dim comes from data: the last segment id + 1 (read by the
entry from the segment_ids input, dim "segcount(i,t)"), or num_segments (a
constant or a run-time value).  The library op checks ids and indices as TF
does (codegen/cpu/segment.py)."""
from __future__ import annotations

from ..dtypes import FLOATS, INTS
from ..errors import ShapeError, Unsupported
from ..ir.core import Op
from ..shapes.symbolic import dim_max, is_static, known_nonneg
from .hostvals import host_dims
from .rule import OpRule


def _assert(b, lhs: str, rhs: str, node, msg: str) -> None:
    if lhs != rhs:
        b.ops.append(Op("assert_dim_eq", [], [], {"node": node.name, "op": node.op, "msg": msg,
                                                  "lhs": [lhs], "rhs": [rhs]}))


def _segment_count(b, seg, node) -> str:
    """Last segment id + 1 (0 with no ids): a constant, or read at run time
    from the segment_ids function input."""
    for op in reversed(b.ops):
        if seg in op.results and op.name == "constant":
            vals = list(op.attrs["value"])
            return str(int(vals[-1]) + 1 if vals else 0)
    if seg.name.startswith("arg") and seg.name[3:].isdigit():
        return f"segcount({seg.name[3:]},{seg.dtype.tf_enum})"
    raise Unsupported(f"node '{node.name}' ({node.op}): segment_ids computed in the cluster")


def _lower(kind: str, with_num: bool):
    def lower(b, node, xs):
        data, ind, seg = xs[:3]
        if data.type.rank < 1 or ind.type.rank != 1 or seg.type.rank != 1:
            raise ShapeError(f"node '{node.name}' ({node.op}): data must be at least 1-D, "
                             "indices and segment_ids vectors")
        if not b.env.known_equal(ind.shape[0], seg.shape[0]):
            _assert(b, ind.shape[0], seg.shape[0], node,
                    "segment_ids and indices should have same size: {0} vs. {1}")
        if with_num:
            n = (host_dims(b, xs[3]) or [None])[0]
            if n is None:
                raise Unsupported(f"node '{node.name}' ({node.op}): num_segments is not computable")
        else:
            n = _segment_count(b, seg, node)
        if is_static(n) and int(n) < 0:
            raise ShapeError(f"node '{node.name}' ({node.op}): segment ids must be >= 0")
        if not known_nonneg(n):
            _assert(b, dim_max(n, "0"), n, node, "segment ids must be >= 0, got {1} segments")
        out = b.emit("segment_reduce", [data, ind, seg], data.dtype, (n,) + data.shape[1:],
                     kind=kind, node=node.name, op=node.op)
        return [out]
    return lower


def _shape(env, shapes, attrs):
    return [("?",) * len(shapes[0])]


_TYPES = {"T": FLOATS, "Tidx": INTS, "Tsegmentids": INTS}
_NUM_TYPES = dict(_TYPES, Tnumsegments=INTS)
RULES = [
    OpRule(f"SparseSegment{name}", _lower(kind, False), _TYPES, shape_rule=_shape,
           fusion="library")
    for name, kind in (("Sum", "sum"), ("Mean", "mean"), ("SqrtN", "sqrtn"))
] + [
    OpRule(f"SparseSegment{name}WithNumSegments", _lower(kind, True), _NUM_TYPES,
           shape_rule=_shape, fusion="library", value_inputs=(3,))
    for name, kind in (("Sum", "sum"), ("Mean", "mean"), ("SqrtN", "sqrtn"))
]
