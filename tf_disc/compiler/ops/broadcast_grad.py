"""BroadcastGradientArgs: the axes over which the gradients of a broadcast
binary op are summed for its two operands (TF's math_grad: Reshape(Sum(grad,
r0), Shape(x))).  Computed from the shape-valued inputs (hostvals.py) at
compile time, so the Sum's axes stay static and a GradientTape graph is one
cluster instead of splitting at every broadcast op's gradient.

TF's values need to know which dims are 1, which a run-time dim does not
tell; see _position for what is compiled instead.  Sum over a size-1 axis
is a no-op, so the gradient is TF's either way; the raw values are not
(TF reduces every position where both dims are 1, and returns nothing for
equal shapes): when they are a cluster result, calls where such a dim is 1
run the original function (Builder.result_checks, frontend/lower.py)."""
from __future__ import annotations

from ..dtypes import INTS
from ..errors import ShapeError, Unsupported
from ..ir.core import Op
from ..shapes.symbolic import dim_ifzero, dim_sub, is_static
from .hostvals import host_dims, make_host
from .rule import OpRule
from .shape_ops import _assert_eq

_MSG = ("BroadcastGradientArgs: compiled for run-time dims that do not broadcast, "
        "got {0} vs {1}: running this cluster with TensorFlow")
_ONE_MSG = ("BroadcastGradientArgs: compiled for run-time dims other than 1 (its values "
            "are a result), got {0} != {1}: running this cluster with TensorFlow")


def _not_one_checks(node, dims: list[str]) -> list[Op]:
    """Fallback checks that each run-time dim is not 1 (ifzero(d - 1, 0, 1)
    is 1 exactly when d != 1)."""
    return [Op("assert_dim_eq", [], [], {"node": node.name, "op": node.op, "msg": _ONE_MSG,
                                         "lhs": [dim_ifzero(dim_sub(d, "1"), "0", "1")],
                                         "rhs": ["1"], "fallback": True})
            for d in dims]


def _position(b, node, x: str, y: str) -> tuple[bool, bool, bool]:
    """(x reduces, y reduces, equal) at one right-aligned position, from
    what is known at compile time.  A run-time dim is taken as not 1 where
    that cannot change the gradient (the other side is 1 or the same dim:
    the gradient's size there is the dim, so summing over it when it is 1
    is a no-op before TF's Reshape to the input shape); against any other
    dim it must equal it, checked at run time: inputs where they differ
    (one broadcasts) run the cluster's original function (fallback), as
    TF's values would need a different compile."""
    env = b.env
    x1, y1 = env.known_one(x), env.known_one(y)
    if x1 or y1 or env.known_equal(x, y):
        return x1, y1, env.known_equal(x, y)
    if is_static(x) and is_static(y):
        raise ShapeError(f"Incompatible shapes: {x} vs. {y} (node '{node.name}', op {node.op})")
    _assert_eq(b, [x], [y], node, _MSG, fallback=True)
    return False, False, True


def lower_broadcast_gradient_args(b, node, xs):
    """The axes the gradients of the two broadcast operands are summed
    over (TF's BCast without the fewer-dims optimization: none when the
    shapes are equal, else each position where a shape, padded on the left
    with 1s, is 1), as shape-valued constants: Sum's axes stay static, one
    compile for every batch size."""
    shapes = [host_dims(b, v) for v in xs]
    if any(s is None or v.type.rank != 1 for s, v in zip(shapes, xs)):
        raise Unsupported(f"node '{node.name}' ({node.op}): shapes are not computable at "
                          "compile time")
    rank = max(len(s) for s in shapes)
    padded = [["1"] * (rank - len(s)) + [b.env.canon(d) for d in s] for s in shapes]
    pos = [_position(b, node, x, y) for x, y in zip(*padded)]
    equal = len(shapes[0]) == len(shapes[1]) and all(e for _, _, e in pos)
    outs = [make_host(b, [] if equal else [str(p) for p, r in enumerate(pos) if r[k]],
                      xs[0].dtype) for k in range(2)]
    if not equal:
        env = b.env
        risky = sorted({d for row in padded for d in row
                        if not is_static(d) and not env.known_one(d)})
        if risky:
            for v in outs:
                b.result_checks.setdefault(v, []).extend(_not_one_checks(node, risky))
    return outs


RULES = [
    OpRule("BroadcastGradientArgs", lower_broadcast_gradient_args, {"T": INTS},
           dtype_rule=lambda dts, attrs: [dts[0]] * 2, fusion="index", num_outputs=2,
           shape_rule=lambda env, shapes, attrs: [("?",), ("?",)], value_inputs=(0, 1)),
]
