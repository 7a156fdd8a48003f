"""Shape and layout ops: Shape/Size/Rank, Reshape, ExpandDims, Squeeze,
Transpose, BroadcastTo, Fill, Range, ConcatV2, Pack/Unpack, Slice, Tile,
Pad/PadV2, GatherV2, OneHot (StridedSlice: strided_slice.py).

Shape-valued tensors are evaluated symbolically (hostvals.py); data moves
through the "index" IR ops (view, reshape, tile, pad, concatenate, gather,
iota) that fuse with their elementwise consumers.  Values that shapes need
(perm, axes, paddings, ...) are constants: in-cluster Consts, or const_inputs
whose value the kernel puts in its cache key.  Sizes and bounds (Reshape's
shape, slice begin/end/size, Fill dims, Tile multiples) are value_inputs:
read by the entry at run time as dims (val(...)) and checked as TF does."""
from __future__ import annotations

import math

from .. import dtypes
from ..dtypes import ALL, INTS, NUMERIC
from ..errors import ShapeError, Unsupported
from ..ir.core import Op
from ..shapes.symbolic import (dim_add, dim_floordiv, dim_ifzero, dim_max, dim_min, dim_mul,
                               dim_sub, is_static, known_nonneg)
from .hostvals import const_array, const_ints, fold_gather, host_dims, make_host
from .rule import OpRule


def _strides(shape) -> list[str]:
    return [dim_mul(*shape[k + 1:]) if shape[k + 1:] else "1" for k in range(len(shape))]


def _assert_eq(b, lhs, rhs, node, msg, lhs_shape=None, rhs_shape=None, fallback=False):
    """Runtime check lhs == rhs (lists of dims) unless known.  fallback: a
    mismatch is not the user's error but an assumption of ours that the
    inputs break, so the call runs the cluster with TensorFlow instead
    (DISC_ERROR_FALLBACK; checks run before any output is allocated)."""
    if all(b.env.known_equal(x, y) for x, y in zip(lhs, rhs)):
        return
    attrs = {"node": node.name, "op": node.op, "msg": msg, "lhs": list(lhs), "rhs": list(rhs)}
    if fallback:
        attrs["fallback"] = True
    if lhs_shape is not None:
        attrs.update(lhs_shape=list(lhs_shape), rhs_shape=list(rhs_shape))
    b.ops.append(Op("assert_dim_eq", [], [], attrs))


def _axis(a: int, rank: int, node) -> int:
    if not -rank <= a < rank:
        raise ShapeError(f"node '{node.name}' ({node.op}): axis {a} out of range for rank {rank}")
    return a % rank if rank else 0


def _reshape(b, x, shape):
    shape = tuple(shape)
    if x.shape == shape:
        return x
    hd = host_dims(b, x)
    out = b.emit("reshape", [x], x.dtype, shape)
    if hd is not None and len(hd) == (int(shape[0]) if shape else 1):
        b.shape_values[out] = hd
    return out


def _view(b, x, shape, strides, base="0"):
    return b.emit("view", [x], x.dtype, tuple(shape), strides=list(strides), base=base)


# -- shape-valued -------------------------------------------------------------
def lower_shape(b, node, xs):
    dt = dtypes.from_tf(node.attrs.get("out_type", 3))
    return [make_host(b, list(xs[0].shape), dt)]


def lower_size(b, node, xs):
    dt = dtypes.from_tf(node.attrs.get("out_type", 3))
    return [make_host(b, [dim_mul(*xs[0].shape) if xs[0].shape else "1"], dt, scalar=True)]


def lower_rank(b, node, xs):
    return [b.constant(xs[0].type.rank, dtypes.I32)]


def _assert_nonneg(b, dims, node, msg: str, floor: str = "0") -> None:
    """Run-time dims from data (val(...)) must be >= floor, as TF checks."""
    for k, d in enumerate(dims):
        if not is_static(d) and not known_nonneg(d):
            _assert_eq(b, [dim_max(d, floor)], [d], node, msg.replace("#", str(k)))


def _reshape_dims(b, node, x, dims: list[str]) -> list[str]:
    """TF Reshape's size list with -1 inferred; an element read at run time
    may be -1 too (then each is checked as TF does)."""
    numel = dim_mul(*x.shape) if x.shape else "1"
    maybe = [not is_static(d) and not known_nonneg(d) for d in dims]
    _assert_nonneg(b, dims, node, "Size # must be non-negative, not {1}", "-1")
    minus = [("1" if d == "-1" else dim_ifzero(dim_add(d, "1"), "1", "0") if m else "0")
             for d, m in zip(dims, maybe)]
    if any(m for m in maybe) and sum(d == "-1" for d in dims) + sum(maybe) > 1:
        count = dim_add(*minus)
        _assert_eq(b, [dim_min(count, "1")], [count], node,
                   "Only one input size may be -1, not {1} of them")
    if all(m == "0" for m in minus):
        return dims
    # TF: when a requested dim is 0, zero input dims are left out of the
    # count so that the -1 dim is still inferred ([0,2,3] -> [0,-1]: [0,6]).
    known = [("1" if d == "-1" else dim_ifzero(dim_add(d, "1"), "1", d) if m else d)
             for d, m in zip(dims, maybe)]
    prod_known = dim_mul(*known) if known else "1"
    prod_nz = dim_mul(*[dim_max(d, "1") for d in known]) if known else "1"
    num_nz = dim_mul(*[dim_max(d, "1") for d in x.shape]) if x.shape else "1"
    missing = dim_floordiv(dim_ifzero(prod_known, num_nz, numel), prod_nz)
    return [missing if d == "-1" else dim_ifzero(dim_add(d, "1"), missing, d) if m else d
            for d, m in zip(dims, maybe)]


def lower_reshape(b, node, xs):
    x, s = xs
    dims = host_dims(b, s)
    if dims is None:
        raise Unsupported(f"node '{node.name}' (Reshape): shape is not computable at compile time")
    numel = dim_mul(*x.shape) if x.shape else "1"
    if any(is_static(d) and int(d) < -1 for d in dims) or sum(d == "-1" for d in dims) > 1:
        raise ShapeError(f"node '{node.name}' (Reshape): bad shape {dims}")
    dims = _reshape_dims(b, node, x, dims)
    _assert_eq(b, [numel], [dim_mul(*dims) if dims else "1"], node,
               "Input to reshape is a tensor with {0} values, but the requested shape has {1}")
    return [_reshape(b, x, dims)]


def lower_expand_dims(b, node, xs):
    x, ax = xs
    (a,) = const_ints(b, ax, node, "axis")
    r = x.type.rank
    a = _axis(a, r + 1, node)
    return [_reshape(b, x, x.shape[:a] + ("1",) + x.shape[a:])]


def lower_squeeze(b, node, xs):
    (x,) = xs
    r = x.type.rank
    axes = sorted({_axis(a, r, node) for a in node.attrs.get("squeeze_dims") or []})
    if not axes:
        if any(not is_static(d) for d in x.shape):
            raise Unsupported(f"node '{node.name}' (Squeeze): squeezing all dims of a dynamic shape")
        axes = [d for d in range(r) if x.shape[d] == "1"]
    for a in axes:
        if x.shape[a] != "1":
            if is_static(x.shape[a]):
                raise ShapeError(f"Can not squeeze dim[{a}], expected a dimension of 1, "
                                 f"got {x.shape[a]} (node '{node.name}', op Squeeze)")
            _assert_eq(b, [x.shape[a]], ["1"], node,
                       f"Can not squeeze dim[{a}], expected a dimension of 1, got {{0}}")
    return [_reshape(b, x, tuple(d for k, d in enumerate(x.shape) if k not in axes))]


def lower_transpose(b, node, xs):
    x, p = xs
    perm = const_ints(b, p, node, "perm")
    r = x.type.rank
    if sorted(perm) != list(range(r)):
        raise ShapeError(f"node '{node.name}' (Transpose): {perm} is not a permutation of "
                         f"rank {r}")
    if perm == list(range(r)):
        return [x]
    st = _strides(x.shape)
    return [_view(b, x, [x.shape[p_] for p_ in perm], [st[p_] for p_ in perm])]


def _bcast_to(b, x, dims, node):
    dims = tuple(dims)
    if len(dims) < x.type.rank:
        raise ShapeError(f"node '{node.name}' ({node.op}): rank {len(dims)} < input rank")
    pad = ("1",) * (len(dims) - x.type.rank) + x.shape
    bad = [k for k, (u, v) in enumerate(zip(pad, dims))
           if not (b.env.known_one(u) or b.env.known_equal(u, v))]
    if bad:
        b.ops.append(Op("assert_broadcastable", [], [], {
            "node": node.name, "op": node.op, "msg": "Incompatible shapes: {0} vs. {1}",
            "lhs": list(x.shape), "rhs": list(dims)}))
    return b.broadcast_to(x, dims)


def lower_broadcast_to(b, node, xs):
    x, s = xs
    dims = host_dims(b, s)
    if dims is None:
        raise Unsupported(f"node '{node.name}' (BroadcastTo): shape is not computable")
    _assert_nonneg(b, dims, node, "Dimension # must be >= 0, got {1}")
    return [_bcast_to(b, x, dims, node)]


def lower_fill(b, node, xs):
    s, v = xs
    dims = host_dims(b, s)
    if dims is None:
        raise Unsupported(f"node '{node.name}' (Fill): dims are not computable")
    _assert_nonneg(b, dims, node, "Dimension # must be >= 0, got {1}")
    return [b.broadcast_to(v, tuple(dims))]


def _known_le(a: str, c: str) -> bool:
    if is_static(a) and is_static(c):
        return int(a) <= int(c)
    return a == c or (is_static(a) and int(a) <= 0 and known_nonneg(c))


def lower_range(b, node, xs):
    dt = dtypes.from_tf(node.attrs["Tidx"])
    hs = [host_dims(b, x) for x in xs]
    args = [int(x.name[3:]) if x.name.startswith("arg") and x.type.rank == 0 else None
            for x in xs]
    if dt.is_int and all(h is not None for h in hs) and \
            (is_static(hs[2][0]) or any(a is None for a in args)):
        start, limit, delta = (h[0] for h in hs)
        if not is_static(delta):
            raise Unsupported(f"node '{node.name}' (Range): delta must be a constant")
        d = int(delta)
        if d == 0:
            raise ShapeError(f"Requires delta != 0: 0 (node '{node.name}', op Range)")
        lo, hi = (start, limit) if d > 0 else (limit, start)
        if not _known_le(lo, hi):  # TF's sign check, on values read at run time
            what = "start <= limit when delta > 0" if d > 0 else "start >= limit when delta < 0"
            _assert_eq(b, [dim_min(lo, hi)], [lo], node, f"Requires {what}: got {{1}} vs {{0}}")
        if all(is_static(t) for t in (start, limit)):
            n = str(max(0, -(-(int(limit) - int(start)) // d)))
        elif d > 0:
            n = dim_max("0", dim_floordiv(dim_add(dim_sub(limit, start), str(d - 1)), str(d)))
        else:
            n = dim_max("0", dim_floordiv(dim_add(dim_sub(start, limit), str(-d - 1)), str(-d)))
        io = b.emit("iota", [], dt, (n,), dimension=0)
        st = b.broadcast_to(make_host(b, [start], dt, scalar=True), (n,))
        out = b.elementwise("add", st, b.elementwise("multiply", io, b.scalar_like(d, io)))
        return [out]
    if all(a is not None for a in args):
        # start/limit/delta are the cluster's inputs: size computed by the host
        n = f"rangelen({args[0]},{args[1]},{args[2]},{dt.tf_enum})"
        io = b.emit("iota", [], dt, (n,), dimension=0)
        return [b.elementwise("add", b.broadcast_to(xs[0], (n,)),
                              b.elementwise("multiply", io, b.broadcast_to(xs[2], (n,))))]
    vals = [const_array(b, x, node, "start/limit/delta")[0] for x in xs]
    start, limit, delta = vals
    if delta == 0:
        raise ShapeError(f"Requires delta != 0: 0 (node '{node.name}', op Range)")
    n = max(0, math.ceil(abs((limit - start) / delta))) if dt.is_float else \
        max(0, -(-(int(limit) - int(start)) // int(delta)))
    io = b.emit("iota", [], dt, (str(n),), dimension=0)
    return [b.elementwise("add", b.scalar_like(start, io),
                          b.elementwise("multiply", io, b.scalar_like(delta, io)))]


def _concat(b, node, xs, axis):
    r = xs[0].type.rank
    a = _axis(axis, r, node)
    for x in xs[1:]:
        if x.type.rank != r:
            raise ShapeError(f"ConcatOp : Ranks of all input tensors should match: shape[0] "
                             f"rank {r} vs. rank {x.type.rank} (node '{node.name}')")
    hs = [host_dims(b, x) for x in xs]
    if r == 1 and all(h is not None for h in hs):
        return make_host(b, [d for h in hs for d in h], xs[0].dtype)
    shape = list(xs[0].shape)
    for i, x in enumerate(xs[1:], 1):
        for d in range(r):
            if d != a and not b.env.known_equal(x.shape[d], shape[d]):
                _assert_eq(b, [shape[d]], [x.shape[d]], node,
                           "ConcatOp : Dimension " + str(d) + " in both shapes must be equal: "
                           "shape[0] = {0} vs. shape[" + str(i) + "] = {1}",
                           xs[0].shape, x.shape)
                b.env.assume_equal(shape[d], x.shape[d])
    shape = [b.env.canon(d) for d in shape]
    parts = [x for x in xs if x.shape[a] != "0"] or xs[:1]
    parts = [b.reshape_to(x, tuple(shape[:a]) + (x.shape[a],) + tuple(shape[a + 1:]))
             for x in parts]
    shape[a] = dim_add(*[x.shape[a] for x in xs])
    if len(parts) == 1:
        return parts[0]
    return b.emit("concatenate", parts, xs[0].dtype, tuple(shape), dimension=a)


def lower_concat_v2(b, node, xs):
    *vals, ax = xs
    (a,) = const_ints(b, ax, node, "axis")
    return [_concat(b, node, vals, a)]


def lower_pack(b, node, xs):
    r = xs[0].type.rank
    a = _axis(node.attrs.get("axis", 0), r + 1, node)
    hs = [host_dims(b, x) for x in xs]
    if r == 0 and all(h is not None for h in hs):
        return [make_host(b, [h[0] for h in hs], xs[0].dtype)]
    ex = [_reshape(b, x, x.shape[:a] + ("1",) + x.shape[a:]) for x in xs]
    return [_concat(b, node, ex, a)]


def lower_unpack(b, node, xs):
    (x,) = xs
    r = x.type.rank
    a = _axis(node.attrs.get("axis", 0), r, node)
    num = node.attrs["num"]
    if not is_static(x.shape[a]):
        _assert_eq(b, [x.shape[a]], [str(num)], node,
                   "Input shape axis " + str(a) + " must equal " + str(num) + ", got shape {0}",
                   x.shape, x.shape)
    st = _strides(x.shape)
    shape = [d for k, d in enumerate(x.shape) if k != a]
    strides = [s for k, s in enumerate(st) if k != a]
    hd = host_dims(b, x)
    outs = []
    for i in range(num):
        if hd is not None and r == 1:
            outs.append(make_host(b, [hd[i]], x.dtype, scalar=True))
        else:
            outs.append(_view(b, x, shape, strides, dim_mul(str(i), st[a])))
    return outs


def lower_slice(b, node, xs):
    x, bg, sz = xs
    begin, size = host_dims(b, bg), host_dims(b, sz)
    if begin is None or size is None:
        raise Unsupported(f"node '{node.name}' (Slice): begin/size are not computable")
    r = x.type.rank
    hd = host_dims(b, x)
    out_shape = []
    for d in range(r):
        rest = dim_sub(x.shape[d], begin[d])
        # size -1 means "to the end", also when the host computes it
        s = size[d] if is_static(size[d]) and size[d] != "-1" else \
            dim_ifzero(dim_add(size[d], "1"), rest, size[d])
        out_shape.append(s)
        if is_static(begin[d]) and int(begin[d]) < 0:
            raise ShapeError(f"Expected begin[{d}] in [0, ...] (node '{node.name}')")
        for what, v in (("begin", begin[d]), ("size", s)):
            if not is_static(v):
                _assert_eq(b, [dim_max(v, "0")], [v], node,
                           f"Expected {what}[{d}] >= 0, but got {{1}}")
        end = dim_add(begin[d], s)
        _assert_eq(b, [dim_min(end, x.shape[d])], [end], node,
                   f"Expected size[{d}] in [0, {{0}}], but got {{1}}")
    if hd is not None and r == 1 and all(is_static(t) for t in begin + out_shape):
        return [make_host(b, hd[int(begin[0]):int(begin[0]) + int(out_shape[0])], x.dtype)]
    st = _strides(x.shape)
    base = dim_add(*[dim_mul(bd, s) for bd, s in zip(begin, st)]) if r else "0"
    if tuple(out_shape) == x.shape and base == "0":
        return [x]
    return [_view(b, x, out_shape, st, base)]


def lower_tile(b, node, xs):
    x, m = xs
    mult = host_dims(b, m)
    if mult is None:
        raise Unsupported(f"node '{node.name}' (Tile): multiples are not computable")
    if len(mult) != x.type.rank:
        raise ShapeError(f"Expected multiples argument to be a vector of length "
                         f"{x.type.rank} but got length {len(mult)} (node '{node.name}')")
    _assert_nonneg(b, mult, node, "Expected multiples[#] >= 0, but got {1}")
    shape = tuple(dim_mul(d, k) for d, k in zip(x.shape, mult))
    if shape == x.shape:
        return [x]
    return [b.emit("tile", [x], x.dtype, shape)]


def lower_pad(b, node, xs):
    x, p = xs[0], xs[1]
    pads = const_ints(b, p, node, "paddings")
    r = x.type.rank
    if len(pads) != 2 * r or any(v < 0 for v in pads):
        raise ShapeError(f"node '{node.name}' ({node.op}): bad paddings {pads}")
    pv = xs[2] if len(xs) == 3 else b.constant(0, x.dtype)
    if pv.type.rank != 0:
        raise ShapeError(f"node '{node.name}': constant_values must be a scalar")
    if not any(pads):
        return [x]
    lo = [str(pads[2 * d]) for d in range(r)]
    shape = tuple(dim_add(str(pads[2 * d]), x.shape[d], str(pads[2 * d + 1])) for d in range(r))
    return [b.emit("pad", [x, pv], x.dtype, shape, lo=lo)]


def lower_gather_v2(b, node, xs):
    params, ind, ax = xs
    (a,) = const_ints(b, ax, node, "axis")
    if node.attrs.get("batch_dims", 0):
        raise Unsupported(f"node '{node.name}' (GatherV2): batch_dims")
    a = _axis(a, params.type.rank, node)
    folded = fold_gather(b, params, ind, a)
    if folded is not None:
        return [folded]
    shape = params.shape[:a] + ind.shape + params.shape[a + 1:]
    return [b.emit("gather", [params, ind], params.dtype, shape, axis=a)]


def lower_one_hot(b, node, xs):
    ind, depth, on, off = xs
    (dep,) = host_dims(b, depth) or [None]
    if dep is None:
        raise Unsupported(f"node '{node.name}' (OneHot): depth is not computable")
    _assert_nonneg(b, [dep], node, "depth must be non-negative, got {1}")
    r = ind.type.rank
    a = node.attrs.get("axis", -1)
    a = r if a == -1 else a
    shape = ind.shape[:a] + (dep,) + ind.shape[a:]
    io = b.emit("iota", [], ind.dtype, shape, dimension=a)
    bi = b.emit("broadcast_in_dim", [ind], ind.dtype, shape,
                broadcast_dimensions=[d for d in range(r + 1) if d != a])
    eq = b.elementwise("compare", io, bi, direction="EQ")
    return [b.elementwise("select", eq, b.broadcast_to(on, shape), b.broadcast_to(off, shape),
                          dtype=on.dtype)]


# -- rules ----------------------------------------------------------------------
def _dt(attr):
    return lambda dts, attrs: [dtypes.from_tf(attrs.get(attr, 3))]


def _dt_in(k):
    return lambda dts, attrs: [dts[k]]


def _rank(n):
    """Shape rule giving only the rank (n: function of input shapes, attrs)."""
    return lambda env, shapes, attrs: [("?",) * n(shapes, attrs)]


def _squeeze_rank(shapes, attrs):
    r = len(shapes[0])
    axes = attrs.get("squeeze_dims") or []
    return r - len({a % r for a in axes}) if axes else \
        r - sum(1 for d in shapes[0] if d == "1")


IDX = {"Tidx": INTS}
RULES = [
    # start/limit/delta from outside the cluster are read by the host (no
    # const_inputs: one executable for all values)
    OpRule("Range", lower_range, {"Tidx": NUMERIC}, dtype_rule=_dt("Tidx"),
           shape_rule=_rank(lambda s, a: 1), fusion="index"),
    OpRule("Shape", lower_shape, {"T": ALL, "out_type": INTS}, dtype_rule=_dt("out_type"),
           shape_rule=_rank(lambda s, a: 1), fusion="index"),
    OpRule("Size", lower_size, {"T": ALL, "out_type": INTS}, dtype_rule=_dt("out_type"),
           shape_rule=_rank(lambda s, a: 0), fusion="index"),
    OpRule("Rank", lower_rank, {"T": ALL}, dtype_rule=lambda d, a: [dtypes.I32],
           shape_rule=_rank(lambda s, a: 0), fusion="index"),
    OpRule("Reshape", lower_reshape, {"T": ALL, "Tshape": INTS},
           shape_rule=_rank(lambda s, a: int(s[1][0])), fusion="index", value_inputs=(1,)),
    OpRule("ExpandDims", lower_expand_dims, {"T": ALL, "Tdim": INTS},
           shape_rule=_rank(lambda s, a: len(s[0]) + 1), fusion="index", const_inputs=(1,)),
    OpRule("Squeeze", lower_squeeze, {"T": ALL},
           shape_rule=_rank(lambda s, a: _squeeze_rank(s, a)), fusion="index"),
    OpRule("Transpose", lower_transpose, {"T": ALL, "Tperm": INTS}, fusion="index",
           shape_rule=_rank(lambda s, a: len(s[0])), const_inputs=(1,)),
    OpRule("BroadcastTo", lower_broadcast_to, {"T": ALL, "Tidx": INTS}, fusion="index",
           shape_rule=_rank(lambda s, a: int(s[1][0])), value_inputs=(1,)),
    OpRule("Fill", lower_fill, {"T": ALL, "index_type": INTS}, dtype_rule=_dt_in(1),
           shape_rule=_rank(lambda s, a: int(s[0][0])), fusion="index", value_inputs=(0,)),
    # the axis (the last input) from outside the cluster: its value in the key
    OpRule("ConcatV2", lower_concat_v2, {"T": ALL, "Tidx": INTS}, fusion="index",
           shape_rule=_rank(lambda s, a: len(s[0])), const_inputs=(-1,)),
    OpRule("Pack", lower_pack, {"T": ALL}, fusion="index",
           shape_rule=_rank(lambda s, a: len(s[0]) + 1)),
    OpRule("Unpack", lower_unpack, {"T": ALL}, fusion="index",
           shape_rule=_rank(lambda s, a: len(s[0]) - 1)),
    OpRule("Slice", lower_slice, {"T": ALL, "Index": INTS}, fusion="index",
           shape_rule=_rank(lambda s, a: len(s[0])), value_inputs=(1, 2)),
    OpRule("Tile", lower_tile, {"T": ALL, "Tmultiples": INTS}, fusion="index",
           shape_rule=_rank(lambda s, a: len(s[0])), value_inputs=(1,)),
    OpRule("Pad", lower_pad, {"T": ALL, "Tpaddings": INTS}, fusion="index",
           shape_rule=_rank(lambda s, a: len(s[0])), const_inputs=(1,)),
    OpRule("PadV2", lower_pad, {"T": ALL, "Tpaddings": INTS}, fusion="index",
           shape_rule=_rank(lambda s, a: len(s[0])), const_inputs=(1,)),
    OpRule("GatherV2", lower_gather_v2, {"Tparams": ALL, "Tindices": INTS, "Taxis": INTS},
           fusion="index", attr_values={"batch_dims": (0,)},
           shape_rule=_rank(lambda s, a: len(s[0]) + len(s[1]) - 1), const_inputs=(2,)),
    OpRule("OneHot", lower_one_hot, {"T": ALL, "TI": INTS}, dtype_rule=_dt_in(2),
           fusion="index", shape_rule=_rank(lambda s, a: len(s[0]) + 1), const_inputs=(1,)),
]
del IDX
