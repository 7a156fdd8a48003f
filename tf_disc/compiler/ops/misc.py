"""Const, pass-through ops, Cast, BiasAdd, AddN, ZerosLike/OnesLike."""
from __future__ import annotations

from .. import dtypes
from ..dtypes import ALL, NUMERIC
from ..errors import Unsupported, template_text
from .hostvals import host_dims, make_host
from .rule import OpRule, same_shape
from .tensor_list import PendingList


def lower_const(b, node, xs):
    arr = node.attrs["value"]
    return [b.constant(arr, dtypes.from_tf(node.attrs["dtype"]), arr.shape)]


def _const_dtype(dts, attrs):
    return [dtypes.from_tf(attrs["dtype"])]


def _const_shape(env, shapes, attrs):
    return [tuple(str(d) for d in attrs["value"].shape)]


def lower_identity(b, node, xs):
    return [xs[0]]


def lower_cast(b, node, xs):
    dst = dtypes.from_tf(node.attrs["DstT"])
    hd = host_dims(b, xs[0])  # int shape values stay symbolic (hostvals.py)
    if hd is not None and dst.is_int:
        return [make_host(b, hd, dst, scalar=xs[0].type.rank == 0)]
    return [b.convert(xs[0], dst)]


def _cast_dtype(dts, attrs):
    return [dtypes.from_tf(attrs["DstT"])]


def lower_bias_add(b, node, xs):
    value, bias = xs
    if value.type.rank < 2:
        raise Unsupported(f"BiasAdd node '{node.name}': input must be at least 2-D")
    if bias.type.rank != 1:
        raise Unsupported(f"BiasAdd node '{node.name}': bias must be 1-D")
    last = value.type.rank - 1
    b.assert_dim_eq(bias, 0, value, last, node.name, node.op,
                    "Must provide as many biases as the last dimension of the input "
                    "tensor: {0} vs. {1}", show_shapes=True)
    bias = b.reshape_to(bias, (value.shape[last],))
    bias = b.emit("broadcast_in_dim", [bias], bias.dtype, value.shape,
                  broadcast_dimensions=[last])
    return [b.elementwise("add", value, bias)]


def lower_add_n(b, node, xs):
    """Also of TensorLists (a gradient summing two lists' gradients): dense
    buffers add elementwise; a list no op has set is all zeros."""
    dense = [x for x in xs if not isinstance(x, PendingList)]
    if len(dense) < len(xs):
        if not dense:
            return [xs[0]]
        xs = dense
    acc = xs[0]
    shape = acc.shape
    for i, x in enumerate(xs[1:], start=1):
        shape = b.assert_same_shape(
            xs[0], x, node.name, node.op,
            f"Inputs to operation {template_text(node.name)} of type AddN must have the "
            f"same size and shape.  Input 0: {{0}} != input {i}: {{1}}")
    acc = b.reshape_to(acc, shape)
    for x in xs[1:]:
        acc = b.elementwise("add", acc, b.reshape_to(x, shape))
    return [acc]


def _fill(value):
    def lower(b, node, xs):
        if value == 0 and isinstance(xs[0], PendingList):  # a list no op has set: zeros
            return [xs[0]]
        return [b.scalar_like(value, xs[0])]
    return lower


def _pass(name: str) -> OpRule:
    # Pass-through: storage-only dtypes (qint8) too.
    return OpRule(name, lower_identity, {"T": ALL + (dtypes.QINT8,)}, fusion="passthrough")


RULES = [
    OpRule("Const", lower_const, {"dtype": ALL + dtypes.HALF}, dtype_rule=_const_dtype,
           shape_rule=_const_shape, fusion="constant"),
    _pass("Identity"),
    _pass("StopGradient"),
    _pass("Snapshot"),
    OpRule("IdentityN", lambda b, node, xs: list(xs), {"T": ALL}, fusion="passthrough",
           dtype_rule=lambda dts, attrs: list(dts),
           shape_rule=lambda env, shapes, attrs: list(shapes)),
    OpRule("Cast", lower_cast, {"SrcT": ALL, "DstT": ALL}, dtype_rule=_cast_dtype,
           attr_values={"Truncate": (False,)}),
    OpRule("BiasAdd", lower_bias_add, {"T": NUMERIC},
           attr_values={"data_format": ("NHWC",)}, shape_rule=same_shape),
    OpRule("AddN", lower_add_n, {"T": NUMERIC}),
    # Of a TensorList too (a gradient's zeros for a list): zero elements.
    OpRule("ZerosLike", _fill(0), {"T": ALL}),
    OpRule("OnesLike", _fill(1), {"T": ALL}),
]
