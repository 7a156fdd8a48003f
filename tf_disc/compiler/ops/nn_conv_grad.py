"""Conv2DBackpropInput and Conv2DBackpropFilter (NHWC) as `window` ops run
by runtime kernels, so gradient graphs cluster instead of splitting at every
convolution.

- Backprop input is the `window` op of kind conv_transpose
  (runtime/cpu/conv_transpose.cc): col2im, or one stride-1 convolution per
  output phase with the filter taps that reach it; no work is spent on the
  zeros a strided gradient would have between its rows and columns.
- Backprop filter is the `window` op of kind conv_backprop_filter
  (runtime/cpu/conv_filter_grad.cc): patches of a few hundred output pixels at
  a time in a cache-sized panel, times the output gradient, accumulated.

input_sizes / filter_sizes (from ShapeN in TF's gradient) are shape-valued tensors (hostvals.py): constants,
const_inputs in the cache key, or tf.shape-derived dims in the cluster.  The
output gradient's dims are checked at run time against the sizes TF computes
from them (GetWindowedOutputSize), with TF's messages.

DepthwiseConv2dNativeBackpropInput / ...BackpropFilter are the window kinds
depthwise_backprop_input / depthwise_backprop_filter
(runtime/cpu/depthwise_grad.cc), with the same operand layout and the checks of
TF's depthwise_conv_grad_op.cc (its messages: TF's oneDNN build reports bad
shapes as an Aborted "could not create a primitive descriptor" instead)."""
from __future__ import annotations

from .. import dtypes
from ..dtypes import ALL, FLOATS, INTS
from ..errors import ShapeError, Unsupported
from ..shapes.symbolic import dim_mul
from .hostvals import host_dims, make_host
from .nn_conv import _EachOf, _explicit_pads, _nhwc_pair, window_out_dim
from .rule import OpRule
from .shape_ops import _assert_eq


def _sizes(b, node, v, what: str) -> list[str]:
    dims = host_dims(b, v)
    if dims is None:
        raise Unsupported(f"node '{node.name}' ({node.op}): {what} is not computable at "
                          "compile time")
    if len(dims) != 4:
        raise ShapeError(f"{node.op}: {what} must have 4 elements, got {len(dims)} "
                         f"(node '{node.name}')")
    return dims


class _Geometry:
    """One spatial dim of the forward convolution and its output size (the
    runtime derives SAME's padding from the sizes, as for Conv2D)."""

    def __init__(self, size: str, k: str, stride: int, dilation: int, padding: str,
                 lo: int, hi: int) -> None:
        self.stride, self.dilation = stride, dilation
        self.out = window_out_dim(size, k, stride, dilation, padding, lo, hi)


def _geometry(node, sizes: list[str], k: tuple[str, str]) -> tuple[_Geometry, _Geometry]:
    if node.attrs.get("data_format", "NHWC") != "NHWC":
        raise Unsupported(f"{node.op} node '{node.name}': only NHWC")
    padding = node.attrs.get("padding", "VALID")
    if padding not in ("SAME", "VALID", "EXPLICIT"):
        raise Unsupported(f"{node.op} node '{node.name}': padding {padding!r}")
    strides = _nhwc_pair(node, "strides", node.attrs.get("strides"))
    dilations = _nhwc_pair(node, "dilations", node.attrs.get("dilations"))
    pads = _explicit_pads(node)
    return tuple(_Geometry(sizes[1 + a], k[a], strides[a], dilations[a], padding,
                           pads[2 * a], pads[2 * a + 1]) for a in range(2))


def _check_out_backprop(b, node, dy, geo) -> None:
    for a, g in enumerate(geo):
        _assert_eq(b, [dy.shape[1 + a]], [g.out], node,
                   f"{node.op}: Size of out_backprop doesn't match computed: actual = {{0}}, "
                   f"computed = {{1}} spatial_dim: {1 + a} stride: {g.stride} "
                   f"dilation: {g.dilation}")


def _check(b, node, got: str, want: str, msg: str) -> None:
    _assert_eq(b, [got], [want], node, f"{node.op}: {msg}: {{0}} vs {{1}}")


def _emit_grad(b, node, kind: str, operands, shape, geo, ksize):
    """The window op of a gradient kind (attrs as codegen/conv.py reads them:
    the forward convolution's padding, strides, dilations and filter size)."""
    return b.emit("window", operands, operands[0].dtype, tuple(b.env.canon(d) for d in shape),
                  kind=kind, padding=node.attrs.get("padding", "VALID"),
                  pads=_explicit_pads(node), strides=[g.stride for g in geo],
                  dilations=[g.dilation for g in geo], ksize=list(ksize), node=node.name,
                  op=node.op)


def lower_backprop_input(b, node, xs):
    sizes_v, f, dy = xs
    if f.type.rank != 4 or dy.type.rank != 4:
        raise ShapeError(f"{node.op}: filter and out_backprop must be 4-D (node '{node.name}')")
    sizes = _sizes(b, node, sizes_v, "input_sizes")
    geo = _geometry(node, sizes, f.shape[:2])
    _check(b, node, dy.shape[0], sizes[0], "input and out_backprop must have the same batch size")
    _check(b, node, sizes[3], f.shape[2], "input depth must be equal to filter depth")
    _check(b, node, dy.shape[3], f.shape[3],
           "filter and out_backprop must have the same out_depth")
    _check_out_backprop(b, node, dy, geo)
    return [_emit_grad(b, node, "conv_transpose", [dy, f], sizes, geo, f.shape[:2])]


def lower_backprop_filter(b, node, xs):
    x, sizes_v, dy = xs
    if x.type.rank != 4 or dy.type.rank != 4:
        raise ShapeError(f"{node.op}: input and out_backprop must be 4-D (node '{node.name}')")
    kh, kw, ci, co = _sizes(b, node, sizes_v, "filter_sizes")
    geo = _geometry(node, list(x.shape), (kh, kw))
    _check(b, node, dy.shape[0], x.shape[0], "input and out_backprop must have the same batch size")
    _check(b, node, x.shape[3], ci, "input depth must be equal to filter depth")
    _check(b, node, dy.shape[3], co, "filter and out_backprop must have the same out_depth")
    _check_out_backprop(b, node, dy, geo)
    return [_emit_grad(b, node, "conv_backprop_filter", [x, dy], [kh, kw, ci, co], geo,
                       (kh, kw))]


def lower_depthwise_backprop_input(b, node, xs):
    sizes_v, f, dy = xs
    if f.type.rank != 4 or dy.type.rank != 4:
        raise ShapeError(f"{node.op}: filter and out_backprop must be 4-dimensional "
                         f"(node '{node.name}')")
    sizes = _sizes(b, node, sizes_v, "input_sizes")
    geo = _geometry(node, sizes, f.shape[:2])
    _check_depthwise(b, node, sizes[0], sizes[3], f.shape[2:], dy)
    _check_out_backprop(b, node, dy, geo)
    return [_emit_grad(b, node, "depthwise_backprop_input", [dy, f], sizes, geo, f.shape[:2])]


def lower_depthwise_backprop_filter(b, node, xs):
    x, sizes_v, dy = xs
    if x.type.rank != 4 or dy.type.rank != 4:
        raise ShapeError(f"{node.op}: input and out_backprop must be 4-dimensional "
                         f"(node '{node.name}')")
    kh, kw, ci, mult = _sizes(b, node, sizes_v, "filter_sizes")
    geo = _geometry(node, list(x.shape), (kh, kw))
    _check_depthwise(b, node, x.shape[0], x.shape[3], (ci, mult), dy)
    _check_out_backprop(b, node, dy, geo)
    return [_emit_grad(b, node, "depthwise_backprop_filter", [x, dy], [kh, kw, ci, mult], geo,
                       (kh, kw))]


def _check_depthwise(b, node, batch: str, in_depth: str, filter_depths, dy) -> None:
    """TF's depth and batch checks of a depthwise gradient (filter_depths:
    the filter's in_depth and depth multiplier)."""
    _check(b, node, dy.shape[0], batch,
           "input and out_backprop must have the same batch size")
    _check(b, node, in_depth, filter_depths[0],
           "input and filter must have the same in_depth")
    _check(b, node, dy.shape[3], dim_mul(filter_depths[0], filter_depths[1]),
           "out_depth must be in_depth * depth_multiplier")


def lower_shape_n(b, node, xs):
    """ShapeN (how tf.GradientTape's conv gradient gets the sizes): one
    shape-valued tensor per input, like Shape."""
    dt = dtypes.from_tf(node.attrs.get("out_type", 3))
    return [make_host(b, list(x.shape), dt) for x in xs]


def _rank4(env, shapes, attrs):
    return [("?",) * 4]


_ATTRS = {"data_format": ("NHWC",), "padding": ("SAME", "VALID", "EXPLICIT")}
# TF 2.21's CPU depthwise gradients (oneDNN) ignore dilations: they return
# the dilation-1 result (and a VALID output gradient of the dilated size is
# an Aborted error), so dilated ones stay with TF.
_DEPTHWISE_ATTRS = {**_ATTRS, "dilations": _EachOf(1)}

RULES = [
    OpRule("Conv2DBackpropInput", lower_backprop_input, {"T": FLOATS},
           dtype_rule=lambda dts, attrs: [dts[1]], fusion="library", shape_rule=_rank4, attr_values=_ATTRS, const_inputs=(0,)),
    OpRule("Conv2DBackpropFilter", lower_backprop_filter, {"T": FLOATS}, fusion="library",
           shape_rule=_rank4, attr_values=_ATTRS, const_inputs=(1,)),
    OpRule("DepthwiseConv2dNativeBackpropInput", lower_depthwise_backprop_input, {"T": FLOATS},
           dtype_rule=lambda dts, attrs: [dts[1]], fusion="library", shape_rule=_rank4,
           attr_values=_DEPTHWISE_ATTRS, const_inputs=(0,)),
    OpRule("DepthwiseConv2dNativeBackpropFilter", lower_depthwise_backprop_filter,
           {"T": FLOATS}, fusion="library", shape_rule=_rank4, attr_values=_DEPTHWISE_ATTRS,
           const_inputs=(1,)),
    OpRule("ShapeN", lower_shape_n, {"T": ALL, "out_type": INTS}, fusion="index",
           dtype_rule=lambda dts, attrs: [dtypes.from_tf(attrs.get("out_type", 3))] * len(dts),
           shape_rule=lambda env, shapes, attrs: [("?",)] * len(shapes)),
]
