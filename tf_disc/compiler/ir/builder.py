"""Builds IR ops with shapes filled in; used by the frontend lowerings.

The builder owns the function's ShapeEnv and Namer (explicit objects passed
around, not globals).  TF broadcasting is made explicit here: operands get
broadcast_in_dim to the result shape and an assert op records the runtime
check whenever the symbolic shapes cannot prove compatibility.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..dtypes import DType
from ..shapes.symbolic import ShapeEnv
from .core import Namer, Op, TensorType, Value
from .opset import spec


class Builder:
    def __init__(self, env: ShapeEnv, namer: Namer) -> None:
        self.env = env
        self.namer = namer
        self.ops: list[Op] = []
        # Shape-valued tensors (ops/hostvals.py): value -> its elements as dims.
        self.shape_values: dict[Value, list[str]] = {}
        # Checks a lowering needs only when its value is a function result
        # (e.g. ops/broadcast_grad.py): value -> assert ops.
        self.result_checks: dict[Value, list[Op]] = {}
        # Functions nested control flow calls, by name (frontend/functions.py).
        self.library: dict = {}
        # Loop results that are TensorLists TF cannot stack unless an element
        # was set (ops/control_flow.py): value -> (while op, [loop variable,
        # TF's text of the element shape]).
        self.unset_lists: dict[Value, tuple[Op, list]] = {}
        # TensorLists whose every element is shape-valued with these dims
        # (ops/tensor_list.py: a gradient loop's shape accumulators), and
        # lists that are a function argument with one such element pushed:
        # value -> (the argument, dims).
        self.host_lists: dict[Value, list[str]] = {}
        self.host_pushes: dict[Value, tuple[Value, list[str]]] = {}

    # -- generic ------------------------------------------------------------
    def emit(self, name: str, operands: list[Value], dtype: DType,
             shape: tuple[str, ...], **attrs) -> Value:
        spec(name)
        res = Value(self.namer(), TensorType(dtype, tuple(shape)))
        self.ops.append(Op(name, list(operands), [res], dict(attrs)))
        return res

    def elementwise(self, name: str, *xs: Value, dtype: DType | None = None, **attrs) -> Value:
        """Elementwise op over operands of identical symbolic shape."""
        s = spec(name)
        if dtype is None:
            dtype = dtypes.BOOL if s.result == "bool" else xs[-1].dtype
        return self.emit(name, list(xs), dtype, xs[0].shape, **attrs)

    # -- constants ------------------------------------------------------------
    def constant(self, value, dtype: DType, shape: tuple[int, ...] | None = None) -> Value:
        arr = np.asarray(value, dtype=dtype.np)
        if shape is not None:
            arr = arr.reshape(shape)
        flat = [bool(x) if dtype.is_bool else (int(x) if dtype.is_int else float(x))
                for x in arr.reshape(-1).tolist()]
        return self.emit("constant", [], dtype, tuple(str(d) for d in arr.shape), value=flat)

    def scalar_like(self, value, like: Value) -> Value:
        """A constant broadcast to like's shape (fused as an immediate)."""
        return self.broadcast_to(self.constant(value, like.dtype), like.shape)

    def convert(self, x: Value, dtype: DType, **attrs) -> Value:
        if x.dtype == dtype:
            return x
        return self.emit("convert", [x], dtype, x.shape, **attrs)

    # -- shapes ---------------------------------------------------------------
    def broadcast_to(self, x: Value, shape: tuple[str, ...]) -> Value:
        """Right-aligned broadcast_in_dim (no runtime check here)."""
        shape = tuple(shape)
        if x.shape == shape:
            return x
        offset = len(shape) - x.type.rank
        assert offset >= 0, (x, shape)
        return self.emit("broadcast_in_dim", [x], x.dtype, shape,
                         broadcast_dimensions=list(range(offset, len(shape))))

    def check_broadcastable(self, a: Value, b: Value, node: str, op: str) -> None:
        if self.env.needs_broadcast_check(a.shape, b.shape):
            self.ops.append(Op("assert_broadcastable", [], [], {
                "node": node, "op": op, "msg": "Incompatible shapes: {0} vs. {1}",
                "lhs": list(a.shape), "rhs": list(b.shape)}))

    def broadcast_all(self, xs: list[Value], node: str, op: str) -> list[Value]:
        """TF/numpy broadcasting of several operands with runtime checks
        (pairwise compatibility is equivalent to compatibility of all)."""
        for i in range(len(xs)):
            for j in range(i + 1, len(xs)):
                self.check_broadcastable(xs[i], xs[j], node, op)
        shape = self.env.broadcast_shapes(*(x.shape for x in xs))
        return [self.broadcast_to(x, shape) for x in xs]

    def assert_same_shape(self, a: Value, b: Value, node: str, op: str, msg: str) -> tuple:
        """Require equal shapes (runtime check unless provable); returns the
        common shape to use for both."""
        if a.type.rank != b.type.rank:
            from ..errors import ShapeError
            raise ShapeError(msg.format(f"rank {a.type.rank}", f"rank {b.type.rank}")
                             + f" (node '{node}', op {op})")
        if not all(self.env.known_equal(x, y) for x, y in zip(a.shape, b.shape)):
            self.ops.append(Op("assert_same_shape", [], [], {
                "node": node, "op": op, "msg": msg,
                "lhs": list(a.shape), "rhs": list(b.shape)}))
            for x, y in zip(a.shape, b.shape):
                self.env.assume_equal(x, y)
        return tuple(self.env.canon(d) for d in a.shape)

    def assert_dim_eq(self, a: Value, da: int, b: Value, db: int, node: str, op: str,
                      msg: str, show_shapes: bool = False) -> None:
        """Require a.shape[da] == b.shape[db]; the message shows the two dims,
        or with show_shapes the two full shapes."""
        x, y = a.shape[da], b.shape[db]
        if not self.env.known_equal(x, y):
            attrs = {"node": node, "op": op, "msg": msg, "lhs": [x], "rhs": [y]}
            if show_shapes:
                attrs.update(lhs_shape=list(a.shape), rhs_shape=list(b.shape))
            self.ops.append(Op("assert_dim_eq", [], [], attrs))
            self.env.assume_equal(x, y)

    def reshape_to(self, x: Value, shape: tuple[str, ...]) -> Value:
        """x viewed at an assumed-equal shape (same rank; identity at run time)."""
        if x.shape == tuple(shape):
            return x
        return self.emit("broadcast_in_dim", [x], x.dtype, tuple(shape),
                         broadcast_dimensions=list(range(len(shape))))
