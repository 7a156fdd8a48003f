"""Split, SplitV, ReverseV2 and MirrorPad: every output is a strided view
of the input (a negative stride reads a dim backwards), so they fuse into
their consumers like a slice.  Axes, size_splits and paddings are
constants (cache-key values); the checks that depend on dynamic dims run
in the entry with TF's messages."""
from __future__ import annotations

from ..dtypes import ALL, INTS
from ..errors import ShapeError
from ..shapes.symbolic import dim_add, dim_floordiv, dim_max, dim_min, dim_mul, dim_sub
from .hostvals import const_ints
from .rule import OpRule
from .shape_ops import _assert_eq, _concat, _strides, _view


def _slab(b, x, axis: int, start: str, size: str, step: int = 1):
    """x restricted to `size` entries of `axis` from `start`, read with
    `step` (+1 or -1)."""
    st = _strides(x.shape)
    shape = list(x.shape)
    shape[axis] = size
    strides = list(st)
    if step < 0:
        strides[axis] = dim_mul("-1", st[axis])
    if tuple(shape) == x.shape and step > 0 and start == "0":
        return x
    return _view(b, x, shape, strides, dim_mul(start, st[axis]))


def _split_axis(b, node, ax, rank: int) -> int:
    (a,) = const_ints(b, ax, node, "split_dim")
    if not -rank <= a < rank:
        raise ShapeError(f"-{rank} <= split_dim < {rank}, but got {a} (node '{node.name}', "
                         f"op {node.op})")
    return a % rank


def lower_split(b, node, xs):
    ax, x = xs
    k = node.attrs["num_split"]
    a = _split_axis(b, node, ax, x.type.rank)
    n = x.shape[a]
    if k == 1:
        return [x]
    size = dim_floordiv(n, str(k))
    _assert_eq(b, [dim_mul(size, str(k))], [n], node,
               "Number of ways to split should evenly divide the split dimension, but got "
               f"split_dim {a} (size = {{1}}) and num_split {k}")
    return [_slab(b, x, a, dim_mul(str(i), size), size) for i in range(k)]


def lower_split_v(b, node, xs):
    x, sizes_in, ax = xs
    sizes = const_ints(b, sizes_in, node, "size_splits")
    a = _split_axis(b, node, ax, x.type.rank)
    n = x.shape[a]
    if len(sizes) != node.attrs["num_split"]:
        raise ShapeError(f"node '{node.name}' (SplitV): size_splits has {len(sizes)} values, "
                         f"num_split is {node.attrs['num_split']}")
    unknown = [i for i, s in enumerate(sizes) if s == -1]
    if len(unknown) > 1:
        raise ShapeError(f"There can only be one -1 in the input. (node '{node.name}', "
                         "op SplitV)")
    if any(s < -1 for s in sizes):
        raise ShapeError(f"Split size at index {min(i for i, s in enumerate(sizes) if s < -1)} "
                         f"must be >= 0. Got: {min(sizes)} (node '{node.name}', op SplitV)")
    known = sum(s for s in sizes if s >= 0)
    msg = ("Determined shape must either match input shape along split_dim exactly if fully "
           "specified, or be less than the size of the input along split_dim if not fully "
           f"specified.  Got: {known}")
    if unknown:
        _assert_eq(b, [dim_min(n, str(known))], [str(known)], node, msg)
    else:
        _assert_eq(b, [n], [str(known)], node, msg)
    if len(sizes) == 1:
        return [x]
    dims = [dim_sub(n, str(known)) if s == -1 else str(s) for s in sizes]
    outs, start = [], "0"
    for d in dims:
        outs.append(_slab(b, x, a, start, d))
        start = dim_add(start, d)
    return outs


def lower_reverse_v2(b, node, xs):
    x, ax = xs
    r = x.type.rank
    axes = []
    for a in const_ints(b, ax, node, "axis"):
        if not -r <= a < r:
            raise ShapeError(f"'axis'[{len(axes)}] = {a} is out of valid range [0, {r}) "
                             f"(node '{node.name}', op ReverseV2)")
        if a % r in axes:
            raise ShapeError(f"axis {a % r} specified more than once (node '{node.name}', "
                             "op ReverseV2)")
        axes.append(a % r)
    if not axes:
        return [x]
    st = _strides(x.shape)
    strides = [dim_mul("-1", s) if d in axes else s for d, s in enumerate(st)]
    # The last entry of each reversed dim (0 when the dim is empty).
    base = dim_add(*[dim_mul(dim_max(dim_sub(x.shape[d], "1"), "0"), st[d]) for d in axes])
    return [_view(b, x, x.shape, strides, base)]


def lower_mirror_pad(b, node, xs):
    x, p = xs
    r = x.type.rank
    pads = const_ints(b, p, node, "paddings")
    if len(pads) != 2 * r:
        raise ShapeError(f"The first dimension of paddings must be the rank of inputs"
                         f"[{r},2], got [{len(pads) // 2},2] (node '{node.name}', op MirrorPad)")
    reflect = node.attrs.get("mode", "REFLECT") == "REFLECT"
    for d in range(r):
        lo, hi = pads[2 * d], pads[2 * d + 1]
        if lo < 0 or hi < 0:
            raise ShapeError(f"paddings must be non-negative: {lo} {hi} (node '{node.name}', "
                             "op MirrorPad)")
        n, m = x.shape[d], max(lo, hi)
        # REFLECT needs both pads < n (so n >= 1 even for zero pads), SYMMETRIC <= n.
        need = str(m + 1) if reflect else str(m)
        _assert_eq(b, [dim_min(n, need)], [need], node,
                   f"paddings must be less than the dimension size: {lo}, {hi} not less than {{0}}"
                   if reflect else
                   f"paddings must be no greater than the dimension size: {lo}, {hi} greater "
                   "than {0}")
        if not lo and not hi:
            continue
        # REFLECT: rows lo..1 before, n-2..n-1-hi after; SYMMETRIC: lo-1..0, n-1..n-hi.
        skip = 1 if reflect else 0
        last = dim_sub(n, str(1 + skip))
        parts = [_slab(b, x, d, str(lo - 1 + skip), str(lo), -1)] if lo else []
        parts.append(x)
        if hi:
            parts.append(_slab(b, x, d, last, str(hi), -1))
        x = _concat(b, node, parts, d)
    return [x]


RULES = [
    OpRule("Split", lower_split, {"T": ALL}, fusion="index", const_inputs=(0,),
           dtype_rule=lambda dts, attrs: [dts[1]] * attrs["num_split"],
           shape_rule=lambda env, shapes, attrs: [shapes[1]] * attrs["num_split"]),
    OpRule("SplitV", lower_split_v, {"T": ALL, "Tlen": INTS}, fusion="index",
           const_inputs=(1, 2), dtype_rule=lambda dts, attrs: [dts[0]] * attrs["num_split"],
           shape_rule=lambda env, shapes, attrs: [shapes[0]] * attrs["num_split"]),
    OpRule("ReverseV2", lower_reverse_v2, {"T": ALL, "Tidx": INTS}, fusion="index",
           const_inputs=(1,)),
    OpRule("MirrorPad", lower_mirror_pad, {"T": ALL, "Tpaddings": INTS}, fusion="index",
           const_inputs=(1,), attr_values={"mode": ("REFLECT", "SYMMETRIC")}),
]
