"""Elementwise activation gradients (ReluGrad, SigmoidGrad, ...), written
with Eigen's formulas from TF's CPU kernels so that NaN/inf propagate the
same way (ReluGrad multiplies by the mask, so a NaN gradient stays NaN).

Both operands must have the same shape (TF: relu_op.h "g and a must be the
same size"; the cwise *Grad ops ask for equal element counts, which for
the tensors backprop produces is the same shape)."""
from __future__ import annotations

from ..dtypes import FLOATS, NUMERIC
from .rule import OpRule

SELU_SCALE = 1.0507009873554804934193349852946
SELU_SCALE_ALPHA = 1.7580993408473768599402175208123


def _same(b, node, xs, msg):
    a, c = xs
    shape = b.assert_same_shape(a, c, node.name, node.op, msg)
    return b.reshape_to(a, shape), b.reshape_to(c, shape)


def _k(b, v, like):
    return b.scalar_like(v, like)


def _mask(b, cond, like):
    return b.convert(cond, like.dtype)


def _relu_grad(b, g, f, node):
    return b.elementwise("multiply", g, _mask(b, b.elementwise(
        "compare", f, _k(b, 0, f), direction="GT"), g))


def _relu6_grad(b, g, f, node):
    pos = _mask(b, b.elementwise("compare", f, _k(b, 0, f), direction="GT"), g)
    lt6 = _mask(b, b.elementwise("compare", f, _k(b, 6, f), direction="LT"), g)
    return b.elementwise("multiply", g, b.elementwise("multiply", pos, lt6))


def _leaky_relu_grad(b, g, f, node):
    alpha = float(node.attrs.get("alpha", 0.2))
    pos = b.elementwise("compare", f, _k(b, 0, f), direction="GT")
    return b.elementwise("select", pos, g, b.elementwise("multiply", g, _k(b, alpha, g)),
                         dtype=g.dtype)


def _elu_grad(b, g, out, node):
    neg = b.elementwise("compare", out, _k(b, 0, out), direction="LT")
    scaled = b.elementwise("multiply", b.elementwise("add", out, _k(b, 1, out)), g)
    return b.elementwise("select", neg, scaled, g, dtype=g.dtype)


def _selu_grad(b, g, out, node):
    neg = b.elementwise("compare", out, _k(b, 0, out), direction="LT")
    lo = b.elementwise("multiply", g, b.elementwise("add", out, _k(b, SELU_SCALE_ALPHA, out)))
    hi = b.elementwise("multiply", g, _k(b, SELU_SCALE, g))
    return b.elementwise("select", neg, lo, hi, dtype=g.dtype)


def _softplus_grad(b, g, f, node):
    e = b.elementwise("exponential", b.elementwise("negate", f))
    return b.elementwise("divide", g, b.elementwise("add", e, _k(b, 1, e)))


def _sigmoid_grad(b, y, dy, node):
    one_minus = b.elementwise("subtract", _k(b, 1, y), y)
    return b.elementwise("multiply", b.elementwise("multiply", dy, y), one_minus)


def _tanh_grad(b, y, dy, node):
    return b.elementwise("multiply", dy, b.elementwise(
        "subtract", _k(b, 1, y), b.elementwise("multiply", y, y)))


def _zero_where_dy_zero(b, dy, q):
    """Eigen's Sqrt/Rsqrt/Reciprocal gradients return 0 for a zero gradient
    (mul_no_nan: no 0*inf or 0/0 NaN at y == 0 or y == inf)."""
    zero = b.elementwise("compare", dy, _k(b, 0, dy), direction="EQ")
    return b.elementwise("select", zero, _k(b, 0, dy), q, dtype=dy.dtype)


def _rsqrt_grad(b, y, dy, node):
    cube = b.elementwise("multiply", b.elementwise("multiply", dy, y),
                         b.elementwise("multiply", y, y))
    return _zero_where_dy_zero(b, dy, b.elementwise("multiply", _k(b, -0.5, y), cube))


def _sqrt_grad(b, y, dy, node):
    q = b.elementwise("divide", b.elementwise("multiply", _k(b, 0.5, dy), dy), y)
    return _zero_where_dy_zero(b, dy, q)


def _reciprocal_grad(b, y, dy, node):
    """-(y*y)*dy, as Eigen's packet and scalar forms both compute it."""
    yy = b.elementwise("negate", b.elementwise("multiply", y, y))
    return _zero_where_dy_zero(b, dy, b.elementwise("multiply", yy, dy))


_RELU_MSG = "g and a must be the same size: {0} vs. {1}"
_CWISE_MSG = "The two arguments to a cwise op must have same number of elements, got {0} and {1}"


def _grad(name: str, fn, types=FLOATS, msg=_CWISE_MSG) -> OpRule:
    def lower(b, node, xs):
        a, c = _same(b, node, xs, msg)
        return [fn(b, a, c, node)]
    lower.__name__ = f"lower_{name}"
    return OpRule(name, lower, {"T": types})


RULES = [
    _grad("ReluGrad", _relu_grad, NUMERIC, _RELU_MSG),
    _grad("Relu6Grad", _relu6_grad, NUMERIC, _RELU_MSG),
    _grad("LeakyReluGrad", _leaky_relu_grad, FLOATS, _RELU_MSG),
    _grad("EluGrad", _elu_grad, FLOATS, _RELU_MSG),
    _grad("SeluGrad", _selu_grad, FLOATS, _RELU_MSG),
    _grad("SoftplusGrad", _softplus_grad, FLOATS, _RELU_MSG),
    _grad("SigmoidGrad", _sigmoid_grad),
    _grad("TanhGrad", _tanh_grad),
    _grad("RsqrtGrad", _rsqrt_grad),
    _grad("SqrtGrad", _sqrt_grad),
    _grad("ReciprocalGrad", _reciprocal_grad),
    _grad("InvGrad", _reciprocal_grad),
]
