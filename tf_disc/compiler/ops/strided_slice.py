"""StridedSlice as a strided view of its input, and its gradient
StridedSliceGrad (the slice's positions of zeros shaped like the input,
holding dy: a pad), from one expansion of the sparse slice spec.

begin/end are value_inputs (constants, or dims the host computes from
shapes in the cluster: pos_emb[:tf.shape(x)[1]]); strides are constants."""
from __future__ import annotations

import dataclasses

from ..dtypes import ALL, INTS
from ..errors import ShapeError, Unsupported
from ..shapes.symbolic import (dim_add, dim_floordiv, dim_ifzero, dim_max, dim_min, dim_mul,
                               dim_sub, is_static, known_nonneg)
from .hostvals import const_array, const_ints, host_dims, make_host
from .rule import OpRule
from .shape_ops import _assert_eq, _rank, _strides, _view


@dataclasses.dataclass(frozen=True)
class SliceDim:
    """One entry of the expanded spec: a new axis (dim None), a shrunk
    input dim (length "1", not in the output) or a range of one."""
    kind: str          # "new", "shrink" or "range"
    dim: int | None    # the input dim
    begin: str         # the first index read
    length: str        # how many indices
    stride: int


def _clamp(v, lo, hi):
    return dim_min(dim_max(v, lo), hi)


def _bound_dims(b, v, node, what: str) -> list[str]:
    d = host_dims(b, v)
    if d is None:
        d = [str(int(t)) for t in const_array(b, v, node, what)] if v.dtype.is_int else None
    if d is None:
        raise Unsupported(f"node '{node.name}' ({node.op}): {what} is not computable")
    return d


def _wrap(i: str, n: str) -> str:
    """A possibly negative index i counted from the end of a dim of size n."""
    if is_static(i):
        return dim_add(n, i) if int(i) < 0 else i
    if known_nonneg(i):  # a size (a symbol), never negative
        return i
    return dim_ifzero(dim_min(i, "0"), i, dim_add(i, n))


def slice_dims(b, node, shape: tuple[str, ...], bg, en, sd) -> list[SliceDim]:
    """The slice of a tensor of `shape` that begin/end/strides (values) and
    the node's masks select, one entry per input dim and new axis; checks
    shrunk indices as TF does."""
    begin = _bound_dims(b, bg, node, "begin")
    end = _bound_dims(b, en, node, "end")
    strides = const_ints(b, sd, node, "strides")
    if not len(begin) == len(end) == len(strides):
        raise ShapeError(f"Expected begin, end, and strides to be 1D equal size tensors "
                         f"(node '{node.name}')")
    at = node.attrs
    bm, em = at.get("begin_mask", 0), at.get("end_mask", 0)
    ell, nam, sam = at.get("ellipsis_mask", 0), at.get("new_axis_mask", 0), \
        at.get("shrink_axis_mask", 0)
    r = len(shape)
    # (kind, input dim, begin, end, stride, begin masked, end masked)
    spec = []
    n_real = sum(1 for i in range(len(begin)) if not (nam >> i) & 1 and not (ell >> i) & 1)
    d = 0
    for i in range(len(begin)):
        if (ell >> i) & 1:
            for _ in range(r - n_real):
                spec.append(("full", d, 0, 0, 1, 1, 1))
                d += 1
        elif (nam >> i) & 1:
            spec.append(("new", None, 0, 0, 1, 0, 0))
        else:
            kind = "shrink" if (sam >> i) & 1 else "range"
            spec.append((kind, d, begin[i], end[i], strides[i], (bm >> i) & 1, (em >> i) & 1))
            d += 1
    if not ell:
        while d < r:
            spec.append(("full", d, 0, 0, 1, 1, 1))
            d += 1
    if d != r:
        raise ShapeError(f"node '{node.name}' ({node.op}): spec does not match rank {r}")
    out = []
    for kind, dd, bb, ee, s, bmk, emk in spec:
        if kind == "new":
            out.append(SliceDim("new", None, "0", "1", 1))
            continue
        n = shape[dd]
        if s == 0:
            raise ShapeError(f"strides[{dd}] must be non-zero (node '{node.name}')")
        if kind == "shrink":
            idx = _wrap(str(bb), n)
            shown = bb if is_static(str(bb)) else "{1}"
            _assert_eq(b, [_clamp(idx, "0", dim_sub(n, "1"))], [idx], node,
                       f"slice index {shown} of dimension {dd} out of bounds.")
            out.append(SliceDim("shrink", dd, idx, "1", 1))
            continue
        if kind == "full":
            bgn, ln, s = "0", n, 1
        elif s > 0:
            bgn = "0" if bmk else _clamp(_wrap(bb, n), "0", n)
            e = n if emk else _clamp(_wrap(ee, n), "0", n)
            ln = dim_max("0", dim_floordiv(dim_add(dim_sub(e, bgn), str(s - 1)), str(s)))
        else:
            nm1 = dim_sub(n, "1")
            bgn = nm1 if bmk else _clamp(_wrap(bb, n), "-1", nm1)
            e = "-1" if emk else _clamp(_wrap(ee, n), "-1", nm1)
            ln = dim_max("0", dim_floordiv(dim_add(dim_sub(bgn, e), str(-s - 1)), str(-s)))
        out.append(SliceDim("range", dd, bgn, ln, s))
    return out


def _out_shape(dims: list[SliceDim]) -> list[str]:
    return [d.length for d in dims if d.kind != "shrink"]


def lower_strided_slice(b, node, xs):
    x, bg, en, sd = xs
    dims = slice_dims(b, node, x.shape, bg, en, sd)
    st = _strides(x.shape)
    hd = host_dims(b, x)
    out_strides, base = [], []
    host_sel = None
    for d in dims:
        if d.kind == "new":
            out_strides.append("0")
            continue
        if d.kind == "shrink":
            base.append(dim_mul(d.begin, st[d.dim]))
            if hd is not None and is_static(d.begin):
                host_sel = [hd[int(d.begin)]]
            continue
        out_strides.append(dim_mul(str(d.stride), st[d.dim]))
        base.append(dim_mul(d.begin, st[d.dim]) if d.length != "0" else "0")
        if hd is not None and all(is_static(t) for t in (d.begin, d.length)):
            host_sel = hd[int(d.begin)::d.stride][:int(d.length)]
    out_shape = _out_shape(dims)
    if hd is not None and x.type.rank == 1 and host_sel is not None and len(out_shape) <= 1:
        return [make_host(b, host_sel, x.dtype, scalar=not out_shape)]
    # A zero-size result reads nothing: keep the base in range.
    bdim = dim_add(*base) if base else "0"
    if tuple(out_shape) == x.shape and all(o == s_ for o, s_ in zip(out_strides, st)) \
            and bdim == "0":
        return [x]
    return [_view(b, x, out_shape, out_strides, bdim)]


def lower_strided_slice_grad(b, node, xs):
    """Zeros of the input's shape with dy at the slice's positions: dy
    reshaped to one dim per input dim (shrunk ones 1, new axes dropped),
    padded before each dim by the slice's begin.  Strides other than 1 are
    not supported."""
    shape, bg, en, sd, dy = xs
    in_shape = host_dims(b, shape)
    if in_shape is None or shape.type.rank != 1:
        raise Unsupported(f"node '{node.name}' (StridedSliceGrad): shape is not computable")
    dims = slice_dims(b, node, tuple(in_shape), bg, en, sd)
    if any(d.stride != 1 for d in dims):
        raise Unsupported(f"node '{node.name}' (StridedSliceGrad): strides other than 1")
    want = _out_shape(dims)
    if len(want) != dy.type.rank:
        raise ShapeError(f"node '{node.name}' (StridedSliceGrad): dy has rank "
                         f"{dy.type.rank}, the slice {len(want)}")
    _assert_eq(b, list(dy.shape), want, node,
               "shape of dy was {0} instead of {1}", lhs_shape=list(dy.shape), rhs_shape=want)
    per_dim = [d for d in dims if d.kind != "new"]
    lens = tuple(d.length for d in per_dim)
    y = dy if lens == dy.shape else b.emit("reshape", [dy], dy.dtype, lens)
    lo = [d.begin for d in per_dim]
    if all(d == "0" for d in lo) and lens == tuple(in_shape):
        return [y]
    return [b.emit("pad", [y, b.constant(0, dy.dtype)], dy.dtype, tuple(in_shape), lo=lo)]


def _ss_rank(shapes, attrs):
    n = int(shapes[1][0])
    ell, nam, sam = attrs.get("ellipsis_mask", 0), attrs.get("new_axis_mask", 0), \
        attrs.get("shrink_axis_mask", 0)
    r = len(shapes[0])
    out = r + sum((nam >> i) & 1 and not (ell >> i) & 1 for i in range(n))
    out -= sum((sam >> i) & 1 and not (ell >> i) & 1 and not (nam >> i) & 1 for i in range(n))
    return out


RULES = [
    OpRule("StridedSlice", lower_strided_slice, {"T": ALL, "Index": INTS}, fusion="index",
           shape_rule=_rank(_ss_rank), const_inputs=(3,), value_inputs=(1, 2)),
    OpRule("StridedSliceGrad", lower_strided_slice_grad, {"T": ALL, "Index": INTS},
           fusion="index", dtype_rule=lambda dts, attrs: [dts[4]],
           shape_rule=_rank(lambda s, a: int(s[0][0])), const_inputs=(3,),
           value_inputs=(0, 1, 2)),
]
