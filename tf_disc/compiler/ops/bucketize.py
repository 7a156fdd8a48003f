"""Bucketize: the bucket of each element, as TF's CPU kernel computes it
(std::upper_bound over the float `boundaries` attr, i.e. the count of
boundaries b with !(x < b), so NaN lands in the last bucket).  The
comparison happens in C++'s promoted type: float for float/int inputs
(large int64 values round as in TF), double for double inputs."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..dtypes import NUMERIC
from ..errors import Unsupported
from .rule import OpRule

# The boundaries become one unrolled compare per element: keep kernels small.
MAX_BOUNDARIES = 64


def lower_bucketize(b, node, xs):
    (x,) = xs
    bounds = [float(v) for v in node.attrs.get("boundaries") or []]
    if list(bounds) != sorted(bounds):
        raise Unsupported(f"node '{node.name}' (Bucketize): boundaries are not sorted")
    if len(bounds) > MAX_BOUNDARIES:
        raise Unsupported(f"node '{node.name}' (Bucketize): {len(bounds)} boundaries "
                          f"(at most {MAX_BOUNDARIES} are unrolled)")
    cmp_dt = dtypes.F64 if x.dtype == dtypes.F64 else dtypes.F32
    xc = b.convert(x, cmp_dt)
    out = None if bounds else b.broadcast_to(b.constant(0, dtypes.I32), x.shape)
    for v in bounds:
        v = float(np.float32(v))  # the attr holds floats
        above = b.elementwise("not", b.elementwise("compare", xc, b.scalar_like(v, xc),
                                                   direction="LT"))
        step = b.convert(above, dtypes.I32)
        out = step if out is None else b.elementwise("add", out, step)
    return [out]


RULES = [
    OpRule("Bucketize", lower_bucketize, {"T": NUMERIC},
           dtype_rule=lambda dts, attrs: [dtypes.I32]),
]
