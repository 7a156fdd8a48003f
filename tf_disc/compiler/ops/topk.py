"""TopKV2: the k largest entries of each row (last dim) and their indices,
as TF sorts them (descending; equal values by lower index first).  Lowers to
two `topk` library ops (codegen/cpu/topk.py), one per output, so each output is
a plain one-result op; k is a run-time value (a dim), checked as TF does."""
from __future__ import annotations

from .. import dtypes
from ..dtypes import INTS, NUMERIC
from ..errors import ShapeError, Unsupported
from ..shapes.symbolic import dim_max, dim_min
from .hostvals import host_dims
from .rule import OpRule
from .shape_ops import _assert_eq


def lower_top_k(b, node, xs):
    x, kv = xs
    if x.type.rank < 1:
        raise ShapeError(f"input must be >= 1-D, got shape [] (node '{node.name}', op TopKV2)")
    kd = host_dims(b, kv)
    if kd is None or len(kd) != 1:
        raise Unsupported(f"node '{node.name}' (TopKV2): k is not computable")
    (k,) = kd
    n = x.shape[-1]
    _assert_eq(b, [dim_max(k, "0")], [k], node, "Need k >= 0, got {1}")
    # On failure min(k, n) is n: the message shows n and k.
    _assert_eq(b, [dim_min(k, n)], [k], node,
               "input must have at least k columns. Had {0}, needed {1}")
    shape = x.shape[:-1] + (k,)
    return [b.emit("topk", [x], x.dtype, shape, output="values", k=k),
            b.emit("topk", [x], _index_dtype(node.attrs), shape, output="indices", k=k)]


def _index_dtype(attrs: dict):
    return dtypes.from_tf(attrs.get("index_type", 3))


RULES = [
    OpRule("TopKV2", lower_top_k, {"T": NUMERIC, "Tk": INTS, "index_type": INTS},
           fusion="reduction", value_inputs=(1,), attr_values={"sorted": (True,)},
           dtype_rule=lambda dts, attrs: [dts[0], _index_dtype(attrs)],
           shape_rule=lambda env, shapes, attrs: [shapes[0], shapes[0]]),
]
