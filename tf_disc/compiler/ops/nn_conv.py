"""Conv2D, DepthwiseConv2dNative, MaxPool(V2), AvgPool and TF's remapper
fusions _FusedConv2D / _FusedDepthwiseConv2dNative (Grappler fuses
Conv2D+BiasAdd(+activation) before our optimizer sees the graph) -> the
`window` IR op, a runtime library call (codegen/conv.py, runtime/cpu/window.cc).

NHWC only.  Output sizes are symbolic dims computed as TF's
GetWindowedOutputSize does (SAME: ceil(in / stride); VALID/EXPLICIT:
(in + pads - effective_filter + stride) / stride); a negative size is TF's
InvalidArgument at run time.  Fused epilogues (bias, batch norm, add,
activation) become elementwise IR ops that fuse into one loop kernel reading
the convolution's result buffer.

Grouped Conv2D (input depth a multiple of the filter's in-depth, as TF's
own kernel allows): the window op carries grouped=True and the host code
derives the group count at run time, with TF's divisibility errors; one
group per input channel (static depths) is lowered as a depthwise window.

A fused bias or batch norm followed by nothing, Relu or Relu6 (f32/f64)
becomes the window op's epilogue instead (operands scale/shift, attr
activation): the runtime applies it to each output tile while it is in
cache, saving a pass over the output (1x1 64->256 at batch 8: a 26 MB
read and write)."""
from __future__ import annotations

from ..dtypes import F32, F64, FLOATS
from ..errors import Unsupported
from ..ir.core import Op
from ..shapes.symbolic import dim_add, dim_floordiv, dim_max, dim_mul, dim_sub, static_value
from .hostvals import const_ints
from .misc import lower_bias_add
from .rule import OpRule

WINDOW_KINDS = ("conv", "depthwise", "max_pool", "avg_pool")
_PADDINGS = ("SAME", "VALID", "EXPLICIT")


def window_out_dim(size: str, k: str, stride: int, dilation: int, padding: str,
                   lo: int = 0, hi: int = 0) -> str:
    """Output size along one spatial dim (clamped at 0; the host checks the
    unclamped VALID/EXPLICIT value for TF's negative-size error)."""
    s = str(stride)
    if padding == "SAME":
        return dim_floordiv(dim_add(size, str(stride - 1)), s)
    eff = dim_add(dim_mul(dim_sub(k, "1"), str(dilation)), "1")
    return dim_max(dim_floordiv(dim_add(dim_sub(dim_add(size, str(lo + hi)), eff), s), s), "0")


def _nhwc_pair(node, attr: str, values, default: int = 1) -> tuple[int, int]:
    """(h, w) of an NHWC 4-vector attr whose batch and depth entries must be 1."""
    v = list(values) if values is not None else [default] * 4
    if len(v) != 4:
        raise Unsupported(f"{node.op} node '{node.name}': {attr} must have 4 elements")
    if v[0] != 1 or v[3] != 1:
        raise Unsupported(f"{node.op} node '{node.name}': {attr} over batch or depth")
    if v[1] < 1 or v[2] < 1:
        raise Unsupported(f"{node.op} node '{node.name}': {attr} must be positive")
    return int(v[1]), int(v[2])


def _explicit_pads(node) -> list[int]:
    if node.attrs.get("padding") != "EXPLICIT":
        return [0, 0, 0, 0]
    p = [int(x) for x in node.attrs.get("explicit_paddings", [])]
    if len(p) != 8 or any(x != 0 for x in p[:2] + p[6:]) or any(x < 0 for x in p):
        raise Unsupported(f"{node.op} node '{node.name}': explicit_paddings {p}")
    return p[2:6]


def emit_window(b, node, kind: str, x, filt, k: tuple[str, str], out_c: str,
                strides, dilations=(1, 1), grouped: bool = False):
    """The window op (attrs as codegen/conv.py reads them) with symbolic
    output shape [N, OH, OW, out_c]."""
    if x.type.rank != 4:
        raise Unsupported(f"{node.op} node '{node.name}': input must be 4-D")
    padding = node.attrs.get("padding", "VALID")
    if padding not in _PADDINGS:
        raise Unsupported(f"{node.op} node '{node.name}': padding {padding!r}")
    pads = _explicit_pads(node)
    oh = window_out_dim(x.shape[1], k[0], strides[0], dilations[0], padding, pads[0], pads[1])
    ow = window_out_dim(x.shape[2], k[1], strides[1], dilations[1], padding, pads[2], pads[3])
    shape = (b.env.canon(x.shape[0]), oh, ow, b.env.canon(out_c))
    operands = [x] if filt is None else [x, filt]
    return b.emit("window", operands, x.dtype, shape, kind=kind, padding=padding, pads=pads,
                  strides=list(strides), dilations=list(dilations), ksize=list(k),
                  grouped=grouped, node=node.name, op=node.op)


def _per_channel_filter(b, x, f):
    """A grouped Conv2D with one group per input channel (filter in-depth 1:
    Keras' Conv2D(groups=channels), ConvNeXt's 7x7 convolutions) is a
    depthwise convolution, whose runtime kernel is many times faster than
    the grouped one: the filter [kh, kw, 1, C*m] read as [kh, kw, C, m]
    (output channel c*m + j is input channel c's j-th in both).  None unless
    C and C*m are static and C divides C*m (else TF's error at run time)."""
    c, f_in, out = (static_value(b.env.canon(d)) for d in (x.shape[3], f.shape[2], f.shape[3]))
    if f_in != 1 or not c or c == 1 or out is None or out % c:
        return None
    return b.emit("reshape", [f], f.dtype, (f.shape[0], f.shape[1], str(c), str(out // c)))


def _conv_common(b, node, x, f, depthwise: bool):
    if node.attrs.get("data_format", "NHWC") != "NHWC":
        raise Unsupported(f"{node.op} node '{node.name}': only NHWC")
    if x.type.rank != 4 or f.type.rank != 4:
        raise Unsupported(f"{node.op} node '{node.name}': input and filter must be 4-D")
    strides = _nhwc_pair(node, "strides", node.attrs.get("strides"))
    dilations = _nhwc_pair(node, "dilations", node.attrs.get("dilations"))
    grouped = False
    if depthwise:
        b.assert_dim_eq(x, 3, f, 2, node.name, node.op,
                        "input and filter must have the same depth: {0} vs {1}")
        out_c = dim_mul(f.shape[2], f.shape[3])
    else:  # equal depths, or groups checked and counted by the host code
        grouped = not b.env.known_equal(x.shape[3], f.shape[2])
        per_channel = _per_channel_filter(b, x, f) if grouped else None
        if per_channel is not None:
            return _conv_common(b, node, x, per_channel, True)
        out_c = f.shape[3]
    return emit_window(b, node, "depthwise" if depthwise else "conv", x, f,
                       (f.shape[0], f.shape[1]), out_c, strides, dilations, grouped)


def lower_conv2d(b, node, xs):
    return [_conv_common(b, node, xs[0], xs[1], False)]


def lower_depthwise(b, node, xs):
    return [_conv_common(b, node, xs[0], xs[1], True)]


def _per_channel(b, v, y):
    """A [C] vector broadcast along y's last dim."""
    v = b.reshape_to(v, (y.shape[3],))
    return b.emit("broadcast_in_dim", [v], v.dtype, y.shape, broadcast_dimensions=[3])


def _bn_scale_shift(b, node, y, scale, offset, mean, var, epsilon: float):
    """The per-channel s = scale * rsqrt(var + epsilon) and offset - mean * s
    ([C] vectors, C = y's channels, checked)."""
    for i, v in enumerate((scale, offset, mean, var), start=1):
        if v.type.rank != 1:
            raise Unsupported(f"{node.op} node '{node.name}': input {i} must be 1-D")
        b.assert_dim_eq(v, 0, y, 3, node.name, node.op,
                        "scale, offset, mean and variance must have the channel count "
                        "of x: {0} vs {1}")
    var = b.reshape_to(var, (y.shape[3],))
    eps = b.broadcast_to(b.constant(epsilon, var.dtype), var.shape)
    s = b.elementwise("multiply", b.reshape_to(scale, var.shape),
                      b.elementwise("rsqrt", b.elementwise("add", var, eps)))
    shift = b.elementwise("subtract", b.reshape_to(offset, var.shape),
                          b.elementwise("multiply", b.reshape_to(mean, var.shape), s))
    return s, shift


def batch_norm_inference(b, node, y, scale, offset, mean, var, epsilon: float):
    """y * s + (offset - mean * s) with s = scale * rsqrt(var + epsilon): the
    per-channel part is computed once; the rest fuses with y's consumers."""
    s, shift = _bn_scale_shift(b, node, y, scale, offset, mean, var, epsilon)
    return b.elementwise("add", b.elementwise("multiply", y, _per_channel(b, s, y)),
                         _per_channel(b, shift, y))


def _attach_epilogue(b, y, scale, shift, activation: str):
    """Moves y's window op after the epilogue's [C] vectors (computed from
    shapes only, so y's data is not needed yet) and gives them to it."""
    op = next(o for o in reversed(b.ops) if o.results == [y] and o.name == "window")
    b.ops.remove(op)
    vectors = [b.reshape_to(v, (y.shape[3],)) for v in (scale, shift) if v is not None]
    b.ops.append(Op("window", op.operands + vectors, [y],
                    {**op.attrs, "scale": scale is not None, "shift": shift is not None,
                     "activation": activation}))
    return y


_ACTIVATIONS = {"Relu": "relu", "Relu6": "relu6", "Elu": "elu", "LeakyRelu": "leaky_relu"}
_EPILOGUE_ACTIVATIONS = {"Relu": "relu", "Relu6": "relu6"}  # the runtime's DISC_ACT_*


def _lower_fused(depthwise: bool):
    def lower(b, node, xs):
        ops = [s.decode() if isinstance(s, bytes) else s for s in node.attrs.get("fused_ops", [])]
        if int(node.attrs.get("num_host_args", 0)):
            raise Unsupported(f"{node.op} node '{node.name}': host args")
        if node.attrs.get("filter_format", "HWIO") != "HWIO":
            raise Unsupported(f"{node.op} node '{node.name}': filter_format")
        y = _conv_common(b, node, xs[0], xs[1], depthwise)
        args, rest = xs[2:], list(ops)
        epilogue = y.dtype in (F32, F64) and (
            len(rest) == 1 or (len(rest) == 2 and rest[1] in _EPILOGUE_ACTIVATIONS))
        if epilogue and rest[0] == "BiasAdd" and len(args) == 1 and args[0].type.rank == 1:
            b.assert_dim_eq(args[0], 0, y, 3, node.name, node.op,
                            "Must provide as many biases as the last dimension of the input "
                            "tensor: {0} vs. {1}", show_shapes=True)
            return [_attach_epilogue(b, y, None, args[0],
                                     _EPILOGUE_ACTIVATIONS.get(rest[-1], "none"))]
        if epilogue and rest[0] == "FusedBatchNorm" and len(args) == 4:
            s, shift = _bn_scale_shift(b, node, y, *args, float(node.attrs.get("epsilon", 1e-4)))
            return [_attach_epilogue(b, y, s, shift, _EPILOGUE_ACTIVATIONS.get(rest[-1], "none"))]
        if rest[:1] == ["BiasAdd"]:
            if not args:
                raise Unsupported(f"{node.op} node '{node.name}': BiasAdd without a bias")
            y = lower_bias_add(b, node, [y, args[0]])[0]
            args, rest = args[1:], rest[1:]
        elif rest[:1] == ["FusedBatchNorm"]:
            if len(args) < 4:
                raise Unsupported(f"{node.op} node '{node.name}': FusedBatchNorm needs 4 args")
            y = batch_norm_inference(b, node, y, *args[:4],
                                     float(node.attrs.get("epsilon", 1e-4)))
            args, rest = args[4:], rest[1:]
        else:
            raise Unsupported(f"{node.op} node '{node.name}': fused_ops {ops}")
        if rest[:1] == ["Add"]:
            if not args:
                raise Unsupported(f"{node.op} node '{node.name}': Add without an operand")
            shape = b.assert_same_shape(y, args[0], node.name, node.op,
                                        "Incompatible shapes: {0} vs. {1}")
            y = b.elementwise("add", b.reshape_to(y, shape), b.reshape_to(args[0], shape))
            args, rest = args[1:], rest[1:]
        if rest and rest[0] in _ACTIVATIONS:
            attrs = {"alpha": float(node.attrs.get("leakyrelu_alpha", 0.2))} \
                if rest[0] == "LeakyRelu" else {}
            y = b.elementwise(_ACTIVATIONS[rest[0]], y, **attrs)
            rest = rest[1:]
        if rest or args:
            raise Unsupported(f"{node.op} node '{node.name}': fused_ops {ops}")
        return [y]
    return lower


def _pool(kind: str, v2: bool):
    def lower(b, node, xs):
        if node.attrs.get("data_format", "NHWC") != "NHWC":
            raise Unsupported(f"{node.op} node '{node.name}': only NHWC")
        if v2:
            ksize = const_ints(b, xs[1], node, "ksize")
            strides = const_ints(b, xs[2], node, "strides")
        else:
            ksize, strides = node.attrs.get("ksize"), node.attrs.get("strides")
        kh, kw = _nhwc_pair(node, "ksize", ksize)
        x = xs[0]
        return [emit_window(b, node, kind, x, None, (str(kh), str(kw)), x.shape[3] if
                            x.type.rank == 4 else "1", _nhwc_pair(node, "strides", strides))]
    return lower


def _rank4(env, shapes, attrs):
    return [("?",) * 4]


class _EachOf:
    """attr_values entry for a list attr: the frontend's check (`in`)
    takes a list whose every element is allowed; iterating gives the
    elements, which the C++ support table checks one by one."""

    def __init__(self, *allowed: object) -> None:
        self.allowed = allowed

    def __contains__(self, value) -> bool:
        return isinstance(value, list) and all(v in self.allowed for v in value)

    def __iter__(self):
        return iter(self.allowed)


_CONV_ATTRS = {"data_format": ("NHWC",), "padding": _PADDINGS}
_FUSED_OPS = _EachOf("BiasAdd", "FusedBatchNorm", "Add", *_ACTIVATIONS)

RULES = [
    OpRule("Conv2D", lower_conv2d, {"T": FLOATS}, fusion="library", shape_rule=_rank4,
           attr_values=_CONV_ATTRS),
    OpRule("DepthwiseConv2dNative", lower_depthwise, {"T": FLOATS}, fusion="library",
           shape_rule=_rank4, attr_values=_CONV_ATTRS),
    OpRule("_FusedConv2D", _lower_fused(False), {"T": FLOATS, "TArgs": FLOATS},
           fusion="library", shape_rule=_rank4,
           attr_values={**_CONV_ATTRS, "fused_ops": _FUSED_OPS, "num_host_args": (0,),
                        "filter_format": ("HWIO",)}),
    OpRule("_FusedDepthwiseConv2dNative", _lower_fused(True), {"T": FLOATS},
           fusion="library", shape_rule=_rank4,
           attr_values={**_CONV_ATTRS, "fused_ops": _FUSED_OPS}),
    OpRule("MaxPool", _pool("max_pool", False), {"T": FLOATS}, fusion="library",
           shape_rule=_rank4, attr_values={"data_format": ("NHWC",)}),
    OpRule("MaxPoolV2", _pool("max_pool", True), {"T": FLOATS}, fusion="library",
           shape_rule=_rank4, attr_values={"data_format": ("NHWC",)}, const_inputs=(1, 2)),
    OpRule("AvgPool", _pool("avg_pool", False), {"T": FLOATS}, fusion="library",
           shape_rule=_rank4, attr_values={"data_format": ("NHWC",)}),
]
