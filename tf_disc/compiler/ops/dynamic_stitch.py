"""DynamicStitch and ParallelDynamicStitch.

TF semantics: output[indices[i][j]] = data[i][j, ...]; where an index
repeats, the later one wins ((i, j) in order); the output has max(index) + 1
rows and rows no index names are zero (TF 2.21 zero-fills).

Indices known at compile time (tf.reduce_mean's gradient stitches its
kept-dims shape from Range(rank) and the reduced axes): shape-valued data
(a tf.shape and a Fill of ones) give a shape-valued result, so the Reshape
that reads it keeps symbolic dims; other data are concatenated and gathered
with the constant permutation.  Indices given at run time (cluster inputs,
e.g. from DynamicPartition in its gradient or a sharded embedding lookup)
and plans with gaps lower to the `dynamic_stitch` library op
(codegen/cpu/scatter.py), whose row count the entry reads from the indices
(dim "stitchlen").  Indices computed inside the cluster are refused (the
cluster then runs in TF)."""
from __future__ import annotations

import numpy as np

from ..dtypes import ALL, I32
from ..errors import ShapeError, Unsupported
from ..shapes.symbolic import intern_dim, is_static
from .hostvals import host_dims, make_host, producer
from .rule import OpRule
from .shape_ops import _assert_eq, _concat, _reshape

_EVAL_LIMIT = 4096  # elements: indices are shapes' worth of ints
_INT_OPS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
            "floor_mod_int": np.mod, "floor_div_int": np.floor_divide}


def const_value(b, v, depth: int = 0) -> np.ndarray | None:
    """v's elements when the ops that compute it only involve constants
    (Range of a rank, (axes + rank) % rank, broadcasts), else None."""
    if not all(is_static(d) for d in v.shape) or not v.dtype.is_int or depth > 32:
        return None
    shape = tuple(int(d) for d in v.shape)
    if int(np.prod(shape)) > _EVAL_LIMIT:
        return None
    hd = host_dims(b, v)
    if hd is not None:
        return np.asarray([int(d) for d in hd], np.int64).reshape(shape) \
            if all(is_static(d) for d in hd) else None
    op = producer(b, v)
    if op is None:
        return None
    args = [const_value(b, x, depth + 1) for x in op.operands]
    if any(a is None for a in args):
        return None
    if op.name == "constant":
        return np.asarray(op.attrs["value"], np.int64).reshape(shape)
    if op.name == "iota":
        dim = op.attrs["dimension"]
        ax = [1] * len(shape)
        ax[dim] = shape[dim]
        return np.broadcast_to(np.arange(shape[dim]).reshape(ax), shape).copy()
    if op.name == "broadcast_in_dim":
        bd, x = op.attrs["broadcast_dimensions"], args[0]
        view = x.reshape([x.shape[bd.index(k)] if k in bd else 1 for k in range(len(shape))])
        return np.broadcast_to(view, shape).copy()
    if op.name in ("convert", "reshape"):
        return args[0].reshape(shape)
    if op.name in _INT_OPS and len(args) == 2:
        if op.name.startswith("floor_") and np.any(args[1] == 0):
            return None  # TF's division-by-zero error belongs to the kernel
        return _INT_OPS[op.name](args[0], args[1]).reshape(shape)
    return None


def _plan(b, node, idx, vals) -> tuple[int, list[tuple[int, int]] | None]:
    """(output rows, source (input i, flat row j) of each row, None when
    some row has none): later wins."""
    src: dict[int, tuple[int, int]] = {}
    for i, arr in enumerate(vals):
        for j, k in enumerate(arr.reshape(-1).tolist()):
            if k < 0:
                raise ShapeError(f"indices[{j}] is out of range (node '{node.name}', "
                                 f"op {node.op})")
            src[int(k)] = (i, j)
    size = max(src) + 1 if src else 0
    return size, [src[k] for k in range(size)] if len(src) == size else None


def _run_time_rows(b, node, idx, vals) -> str:
    """The output's row count: a constant when every index is, else the
    dim "stitchlen" that the entry reads from the index inputs (cluster
    arguments; indices computed in the cluster are refused)."""
    known = [v for v in vals if v is not None and v.size]
    const = max(int(v.max()) + 1 for v in known) if known else 0
    args = []
    for v, arr in zip(idx, vals):
        if arr is not None:
            continue
        if not (v.name.startswith("arg") and v.name[3:].isdigit()):
            raise Unsupported(f"node '{node.name}' ({node.op}): indices are computed at run "
                              "time inside the cluster")
        args.append(v.name[3:])
    return intern_dim(f"stitchlen({const},{','.join(args)})")


def _scatter(b, node, idx, data, vals, rows: str, tail: tuple):
    """The `dynamic_stitch` library op: zero-filled rows, TF's range check."""
    ops = [v if a is None else b.constant(a.reshape(-1).tolist(), I32, a.shape)
           for v, a in zip(idx, vals)]
    return b.emit("dynamic_stitch", ops + list(data), data[0].dtype, (rows,) + tail,
                  node=node.name, op=node.op)


def lower_dynamic_stitch(b, node, xs):
    n = len(xs) // 2
    idx, data = xs[:n], xs[n:]
    vals = [const_value(b, v) for v in idx]
    r0 = idx[0].type.rank
    if data[0].type.rank < r0:
        raise ShapeError(f"node '{node.name}' ({node.op}): data[0] has rank "
                         f"{data[0].type.rank} below indices[0]'s {r0}")
    tail = tuple(data[0].shape[r0:])
    for i, (ind, x) in enumerate(zip(idx, data)):
        r = ind.type.rank
        if x.type.rank != r + len(tail):
            raise ShapeError(f"node '{node.name}' ({node.op}): data[{i}] has rank "
                             f"{x.type.rank}, want {r + len(tail)} (indices[{i}]: rank {r})")
        _assert_eq(b, list(x.shape), list(ind.shape) + list(tail), node,
                   f"data[{i}].shape = {{0}} does not start with indices[{i}].shape "
                   f"{list(ind.shape)} or differs from data[0]'s trailing dims",
                   x.shape, tuple(ind.shape) + tail)
    if any(v is None for v in vals):
        return [_scatter(b, node, idx, data, vals, _run_time_rows(b, node, idx, vals), tail)]
    size, src = _plan(b, node, idx, vals)
    if src is None:
        return [_scatter(b, node, idx, data, vals, str(size), tail)]
    dtype = data[0].dtype
    if not tail:  # shape-valued data (or constants): a shape-valued result
        hs = [host_dims(b, x) for x in data]
        hs = [h if h is not None else _ints(const_value(b, x)) for h, x in zip(hs, data)]
        if all(h is not None for h in hs):
            return [make_host(b, [hs[i][j] for i, j in src], dtype)]
    counts = [int(np.prod(v.shape)) for v in vals]
    rows = [_reshape(b, x, (str(c),) + tail) for x, c in zip(data, counts)]
    merged = _concat(b, node, rows, 0)
    starts = np.cumsum([0] + counts).tolist()
    perm = b.constant([starts[i] + j for i, j in src], I32, (size,))
    return [b.emit("gather", [merged, perm], dtype, (str(size),) + tail, axis=0)]


def _ints(arr):
    return None if arr is None else [str(int(x)) for x in arr.reshape(-1).tolist()]


def _shape(env, shapes, attrs):
    n = len(shapes) // 2
    return [("?",) * (len(shapes[n]) - len(shapes[0]) + 1)]


RULES = [
    OpRule(name, lower_dynamic_stitch, {"T": ALL}, shape_rule=_shape,
           dtype_rule=lambda dts, attrs: [dts[len(dts) // 2]], fusion="index")
    for name in ("DynamicStitch", "ParallelDynamicStitch")
]
