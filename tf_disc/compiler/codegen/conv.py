"""Host code for `window` ops (ops/nn_conv.py): fills a DiscWindowArgs and
calls rt->window (runtime/cpu/window.cc), after TF's negative-output-size check.

IR attrs: kind (ops/nn_conv.WINDOW_KINDS, or conv_transpose: the input
gradient of the convolution whose input has the result's shape, its
strides/pads/ksize; or conv_backprop_filter: the filter gradient, operands x
and the output gradient; depthwise_backprop_input / _filter likewise for a
depthwise convolution; ops/nn_conv_grad.py), padding SAME|VALID|EXPLICIT,
pads [top, bottom, left, right] (EXPLICIT), strides/dilations [h, w], ksize
[h, w] dims (the filter's for convolutions); operands x (NHWC) and, for
convolutions, the filter.  SAME puts the smaller half of the padding on top
and left, as TF does.  grouped: the group count is the input depth over
the filter's, checked as TF's Conv2D does (divisible depths).  Epilogue
attrs scale / shift (bools: the next operands are those [C] vectors),
residual (bool: the next operand, a tensor of the result's shape added
before the activation; ungrouped conv only) and activation
(none|relu|relu6)."""
from __future__ import annotations

from ..errors import template_text
from ..ir.core import Op, Value
from .cstr import c_string
from .gemm import library_dtype
from .host_checks import free_temps

_KINDS = {"conv": "DISC_WINDOW_CONV", "depthwise": "DISC_WINDOW_DEPTHWISE",
          "max_pool": "DISC_WINDOW_MAX_POOL", "avg_pool": "DISC_WINDOW_AVG_POOL",
          "conv_transpose": "DISC_WINDOW_CONV_TRANSPOSE",
          "conv_backprop_filter": "DISC_WINDOW_CONV_BACKPROP_FILTER",
          "depthwise_backprop_input": "DISC_WINDOW_DEPTHWISE_BACKPROP_INPUT",
          "depthwise_backprop_filter": "DISC_WINDOW_DEPTHWISE_BACKPROP_FILTER"}
# Gradient kinds whose operand 0 is the output gradient (the args' input) and
# whose result is the forward convolution's input (the args' output).
_INPUT_GRADS = ("conv_transpose", "depthwise_backprop_input")
# Gradient kinds whose operand 1 is the output gradient (the args' out_* dims).
_FILTER_GRADS = ("conv_backprop_filter", "depthwise_backprop_filter")
_ACTIVATIONS = {"none": "DISC_ACT_NONE", "relu": "DISC_ACT_RELU", "relu6": "DISC_ACT_RELU6"}
_NEGATIVE = "Computed output size would be negative: {0} [input_size: {1}]"
_IN_DEPTH = "input depth must be evenly divisible by filter depth: {0} vs {1}"
_OUT_DEPTH = "output depth must be evenly divisible by number of groups: {0} vs {1}"


def _fail_unless(cond: str, tmpl: str, a: str, b: str, where: str) -> list[str]:
    """Returns TF's InvalidArgument (tmpl filled with a, b) unless cond."""
    msg = c_string(tmpl + where)
    return [f"    if (!({cond})) {{",
            "      char a[32], b[32];",
            f'      snprintf(a, sizeof a, "%lld", (long long)({a}));',
            f'      snprintf(b, sizeof b, "%lld", (long long)({b}));',
            f"      return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT, {msg}, a, b);",
            "    }"]


def _group_lines(in_c: str, f_depth: str, out_c: str, where: str) -> list[str]:
    """Sets w.groups = in_c / f_depth after TF's two divisibility checks."""
    return (["    {  // grouped convolution",
             f"    const int64_t fd = {f_depth};"]
            + _fail_unless(f"fd > 0 && ({in_c}) % fd == 0", _IN_DEPTH, in_c, "fd", where)
            + [f"    const int64_t groups = ({in_c}) / fd;"]
            + _fail_unless(f"({out_c}) % groups == 0 && ({out_c}) >= groups", _OUT_DEPTH, out_c,
                           "groups", where)
            + ["    w.groups = groups; }"])


def _pad_lines(axis: str, size: str, out: str, k: str, stride: int, dil: int,
               padding: str, lo: int, hi: int, msg: str) -> list[str]:
    """Sets w.pad_<axis> and checks TF's unclamped output size."""
    eff = f"(({k} - 1) * {dil} + 1)"
    field = "pad_top" if axis == "h" else "pad_left"
    if padding == "SAME":
        return [f"    {{ const int64_t t = ({out} - 1) * {stride} + {eff} - {size};",
                f"      w.{field} = t > 0 ? t / 2 : 0; }}"]
    return [f"    {{ const int64_t raw = ({size} + {lo + hi} - {eff} + {stride}) / {stride};",
            "      if (raw < 0) {",
            "        char a[32], b[128];",
            '        snprintf(a, sizeof a, "%lld", (long long)raw);',
            '        snprintf(b, sizeof b, "%lld, effective_filter_size: %lld, stride: %lld",',
            f"                 (long long){size}, (long long){eff}, (long long){stride});",
            f"        return disc_fail(rt, DISC_ERROR_INVALID_ARGUMENT, {msg}, a, b);",
            "      }",
            f"      w.{field} = {lo}; }}"]


def emit_window(op: Op, dn, ptr: dict[Value, str], k: int) -> list[str]:
    """Host lines for one window op (dn: DimNames, ptr: value -> C++ pointer)."""
    a = op.attrs
    x = op.operands[0]
    xd = [dn(d) for d in x.shape]
    out_v = op.operands[1] if a["kind"] in _FILTER_GRADS else op.result
    od = [dn(d) for d in out_v.shape]
    kh, kw = (dn(d) for d in a["ksize"])
    f_depth = dn(op.operands[1].shape[2]) if a.get("grouped") else ""
    out = list(dn.lines)
    dn.lines = []
    (sh, sw), (dh, dw) = a["strides"], a["dilations"]
    pt, pb, pl, pr = a["pads"]
    where = template_text(f" (node '{a['node']}', op {a['op']})")
    msg = c_string(_NEGATIVE + where)
    filt = ptr[op.operands[1]] if len(op.operands) > 1 else "nullptr"
    out += [f"  {{  // window {k}: {a['kind']} {op.result.name}",
            "    DiscWindowArgs w = {};",
            f"    w.kind = {_KINDS[a['kind']]}; w.dtype = {library_dtype(op)};",
            f"    w.batch = {xd[0]}; w.in_h = {xd[1]}; w.in_w = {xd[2]}; w.in_c = {xd[3]};",
            f"    w.out_h = {od[1]}; w.out_w = {od[2]}; w.out_c = {od[3]};",
            f"    w.k_h = {kh}; w.k_w = {kw}; w.stride_h = {sh}; w.stride_w = {sw};",
            f"    w.dilation_h = {dh}; w.dilation_w = {dw};"]
    # Input gradients: strides/pads are those of the convolution from result to x.
    fx, fo = (od, xd) if a["kind"] in _INPUT_GRADS else (xd, od)
    out += _pad_lines("h", fx[1], fo[1], kh, sh, dh, a["padding"], pt, pb, msg)
    out += _pad_lines("w", fx[2], fo[2], kw, sw, dw, a["padding"], pl, pr, msg)
    if a.get("grouped"):
        out += _group_lines(xd[3], f_depth, od[3], where)
    vectors = iter(op.operands[2:])
    for field in ("scale", "shift", "residual"):
        if a.get(field):
            out.append(f"    w.{field} = {ptr[next(vectors)]};")
    out.append(f"    w.activation = {_ACTIVATIONS[a.get('activation', 'none')]};")
    out += [f"    w.input = {ptr[x]}; w.filter = {filt}; w.output = {ptr[op.result]};",
            "    if (rt->window(rt->ctx, &w)) return 1;"]
    out += free_temps(op)
    out.append("  }")
    return out
