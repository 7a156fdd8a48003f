"""TensorProto / AttrValue decoding with numpy only (no TF runtime)."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import Unsupported

# TensorProto field holding typed values, per IR dtype.
_VAL_FIELD = {"f32": "float_val", "f64": "double_val", "i32": "int_val",
              "i64": "int64_val", "i1": "bool_val"}


def tensor_to_numpy(t) -> np.ndarray:
    """TensorProto -> ndarray: tensor_content, or typed values where fewer
    values than elements means 'repeat the last one' (splat)."""
    dt = dtypes.from_tf(t.dtype)
    shape = tuple(d.size for d in t.tensor_shape.dim)
    if any(d < 0 for d in shape) or t.tensor_shape.unknown_rank:
        raise Unsupported("Const with unknown shape")
    n = int(np.prod(shape, dtype=np.int64))
    if t.tensor_content:
        arr = np.frombuffer(t.tensor_content, dtype=np.dtype(dt.np).newbyteorder("<"))
        if arr.size != n:
            raise Unsupported("Const tensor_content size mismatch")
        return arr.astype(dt.np).reshape(shape)
    if dt in dtypes.HALF:   # half_val: each element's 16 bits
        vals = list(np.asarray(t.half_val, np.uint16).view(dt.np))
    else:
        vals = list(getattr(t, _VAL_FIELD[dt.name]))
    if n == 0:
        return np.zeros(shape, dt.np)
    if not vals:
        return np.zeros(shape, dt.np)
    if len(vals) < n:
        vals = vals + [vals[-1]] * (n - len(vals))
    return np.asarray(vals[:n], dtype=dt.np).reshape(shape)


def decode_attr(a):
    """AttrValue -> plain Python value (tensor -> ndarray, type -> enum int)."""
    kind = a.WhichOneof("value")
    if kind == "s":
        return a.s.decode("utf-8", "replace")
    if kind in ("i", "f", "b", "type"):
        return getattr(a, kind)
    if kind == "tensor":
        return tensor_to_numpy(a.tensor)
    if kind == "shape":
        return None if a.shape.unknown_rank else [d.size for d in a.shape.dim]
    if kind == "func":
        return a.func.name
    if kind == "placeholder":
        return "$" + a.placeholder
    if kind == "list":
        lst = a.list
        for f in ("s", "i", "f", "b", "type"):
            vals = list(getattr(lst, f))
            if vals:
                return [v.decode() if isinstance(v, bytes) else v for v in vals]
        if lst.shape:
            return [[d.size for d in s.dim] for s in lst.shape]
        if lst.tensor:
            return [tensor_to_numpy(t) for t in lst.tensor]
        if lst.func:  # a Case's branches
            return [f.name for f in lst.func]
        return []
    return None
