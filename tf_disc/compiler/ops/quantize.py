"""QuantizeV2 and Dequantize to/from qint8 in SCALED mode, per tensor
(axis -1, scalar ranges) or per channel (1-D ranges along `axis`), with
TF's CPU kernel formulas (quantize_op.cc / dequantize_op.cc) in float32:

  QuantizeV2: lo = min(0, min_range); hi = max(0, max(max_range, lo + eps)),
    eps = max(1, |min_range|, |max_range|) * ensure_minimum_range;
    scale = min(-128/lo if lo < 0 else FLT_MAX, 127/hi if hi > 0 else FLT_MAX);
    out = round(clamp(x, -128/scale, 127/scale) * scale), ranges -128/scale, 127/scale
    (round_mode HALF_AWAY_FROM_ZERO, the default); with HALF_TO_EVEN TF scales
    symmetrically: m = max(|lo|, |hi|), t = 127.5 (127 narrow), scale = t/m,
    out = clamp(round_even(clamp(x, -m, m) * scale), -128, 127), ranges -+t/scale.
    MIN_FIRST (per tensor): s = f32(255.0 / f64(hi - lo)),
    out = clamp(round(x * s) - (round(lo * s) + 128), -128, 127), ranges lo, hi.
  Dequantize: out = x * max(min_range / -128, max_range / 127).
(narrow_range moves -128 to -127.)  MIN_COMBINED and Dequantize's MIN_FIRST
stay in TF."""
from __future__ import annotations

import numpy as np

from ..dtypes import F32, F64, QINT8
from ..errors import Unsupported
from .rule import OpRule

FLT_MAX = float(np.finfo(np.float32).max)


def _ranges_to(b, node, x, rng_values, axis):
    """Broadcasts scalar or per-channel range values to x's shape."""
    out = []
    for v in rng_values:
        if axis == -1:
            if v.type.rank != 0:
                raise Unsupported(f"node '{node.name}' ({node.op}): ranges must be scalars")
            out.append(b.broadcast_to(v, x.shape))
            continue
        if v.type.rank != 1:
            raise Unsupported(f"node '{node.name}' ({node.op}): per-channel ranges must be 1-D")
        b.assert_dim_eq(v, 0, x, axis, node.name, node.op,
                        "min_range/max_range size {0} must match input dim {1}")
        v = b.reshape_to(v, (x.shape[axis],))
        out.append(b.emit("broadcast_in_dim", [v], v.dtype, x.shape, broadcast_dimensions=[axis]))
    return out


def _same_ranges(b, node, mn, mx):
    shape = b.assert_same_shape(mn, mx, node.name, node.op,
                                "min_range and max_range must have the same shape: {0} vs {1}")
    return b.reshape_to(mn, shape), b.reshape_to(mx, shape)


def _axis(node, x):
    a = int(node.attrs.get("axis", -1))
    if a < -1 or a >= max(x.type.rank, 1):
        raise Unsupported(f"node '{node.name}' ({node.op}): axis {a} out of range")
    return a


def _k(b, v, like):
    return b.scalar_like(v, like)


def _ew(b, name, *xs, **attrs):
    return b.elementwise(name, *xs, **attrs)


def _round_half_away(b, y):
    """Eigen's pround: trunc(y + copysign(0.49999997, y)) (exact for |y| < 2^23)."""
    t = _ew(b, "floor", _ew(b, "add", _ew(b, "abs", y), _k(b, 0.49999997, y)))
    return _ew(b, "multiply", _ew(b, "sign", y), t)


def lower_quantize_v2(b, node, xs):
    x, mn, mx = xs
    mn, mx = _same_ranges(b, node, mn, mx)
    axis = _axis(node, x)
    narrow = bool(node.attrs.get("narrow_range", False))
    qmin, qmax = (-127.0 if narrow else -128.0), 127.0
    eps_k = float(node.attrs.get("ensure_minimum_range", 0.01))
    lo = _ew(b, "minimum", _k(b, 0.0, mn), mn)
    big = _ew(b, "maximum", _k(b, 1.0, mn), _ew(b, "maximum", _ew(b, "abs", mn),
                                                _ew(b, "abs", mx)))
    eps = _ew(b, "multiply", big, _k(b, eps_k, mn))
    hi = _ew(b, "maximum", _k(b, 0.0, mx), _ew(b, "maximum", mx, _ew(b, "add", lo, eps)))
    if node.attrs.get("mode", "MIN_COMBINED") == "MIN_FIRST":
        if axis != -1:
            raise Unsupported(f"node '{node.name}' (QuantizeV2): MIN_FIRST per channel")
        return _quantize_min_first(b, x, lo, hi)
    if node.attrs.get("round_mode", "HALF_AWAY_FROM_ZERO") == "HALF_TO_EVEN":
        return _quantize_symmetric(b, node, x, lo, hi, axis, narrow)
    from_min = _ew(b, "select", _ew(b, "compare", lo, _k(b, 0.0, lo), direction="LT"),
                   _ew(b, "divide", _k(b, qmin, lo), lo), _k(b, FLT_MAX, lo), dtype=F32)
    from_max = _ew(b, "select", _ew(b, "compare", hi, _k(b, 0.0, hi), direction="GT"),
                   _ew(b, "divide", _k(b, qmax, hi), hi), _k(b, FLT_MAX, hi), dtype=F32)
    scale = _ew(b, "minimum", from_min, from_max)
    out_min = _ew(b, "divide", _k(b, qmin, scale), scale)
    out_max = _ew(b, "divide", _k(b, qmax, scale), scale)
    s_b, lo_b, hi_b = _ranges_to(b, node, x, [scale, out_min, out_max], axis)
    clamped = _ew(b, "maximum", _ew(b, "minimum", x, hi_b), lo_b)
    r = _round_half_away(b, _ew(b, "multiply", clamped, s_b))
    return [b.convert(r, QINT8), out_min, out_max]


def _quantize_min_first(b, x, lo, hi):
    """FloatTensorToQuantizedInPlaceUsingEigen (quantization_utils.h)."""
    span = b.convert(_ew(b, "subtract", hi, lo), F64)
    scale = b.convert(_ew(b, "divide", _k(b, 255.0, span), span), F32)
    offset = _ew(b, "add", _round_half_away(b, _ew(b, "multiply", lo, scale)), _k(b, 128.0, lo))
    s_b, off_b = (b.broadcast_to(v, x.shape) for v in (scale, offset))
    r = _ew(b, "subtract", _round_half_away(b, _ew(b, "multiply", x, s_b)), off_b)
    r = _ew(b, "maximum", _ew(b, "minimum", r, _k(b, 127.0, r)), _k(b, -128.0, r))
    return [b.convert(r, QINT8), lo, hi]


def _quantize_symmetric(b, node, x, lo, hi, axis, narrow):
    m = _ew(b, "maximum", _ew(b, "abs", lo), _ew(b, "abs", hi))
    target = _k(b, 127.0 if narrow else 127.5, m)
    scale = _ew(b, "divide", target, m)
    out_max = _ew(b, "divide", target, scale)
    out_min = _ew(b, "negate", out_max)
    s_b, m_b = _ranges_to(b, node, x, [scale, m], axis)
    clamped = _ew(b, "maximum", _ew(b, "minimum", x, m_b), _ew(b, "negate", m_b))
    r = _ew(b, "round_nearest_even", _ew(b, "multiply", clamped, s_b))
    r = _ew(b, "maximum", _ew(b, "minimum", r, _k(b, 127.0, r)),
            _k(b, -127.0 if narrow else -128.0, r))
    return [b.convert(r, QINT8), out_min, out_max]


def lower_dequantize(b, node, xs):
    x, mn, mx = xs
    mn, mx = _same_ranges(b, node, mn, mx)
    axis = _axis(node, x)
    qmin = -127.0 if node.attrs.get("narrow_range", False) else -128.0
    scale = _ew(b, "maximum", _ew(b, "divide", mn, _k(b, qmin, mn)),
                _ew(b, "divide", mx, _k(b, 127.0, mx)))
    (s_b,) = _ranges_to(b, node, x, [scale], axis)
    return [_ew(b, "multiply", b.convert(x, F32), s_b)]


def _q_shapes(env, shapes, attrs):
    return [shapes[0], shapes[1], shapes[1]]


RULES = [
    OpRule("QuantizeV2", lower_quantize_v2, {"T": (QINT8,)}, num_outputs=3,
           dtype_rule=lambda dts, attrs: [QINT8, F32, F32], shape_rule=_q_shapes,
           attr_values={"mode": ("SCALED", "MIN_FIRST"),
                        "round_mode": ("HALF_AWAY_FROM_ZERO", "HALF_TO_EVEN")}),
    OpRule("Dequantize", lower_dequantize, {"T": (QINT8,), "dtype": (F32,)},
           dtype_rule=lambda dts, attrs: [F32], attr_values={"mode": ("SCALED",)}),
]
