"""InvertPermutation of a permutation known at compile time (Transpose's
gradient transposes back by InvertPermutation(perm), perm a Const): a
constant, so the Transpose that reads it keeps a static perm and the
gradient stays in the cluster instead of splitting it."""
from __future__ import annotations

from ..dtypes import INTS
from ..errors import ShapeError, Unsupported
from .dynamic_stitch import const_value
from .hostvals import make_host
from .rule import OpRule


def lower_invert_permutation(b, node, xs):
    (x,) = xs
    if x.type.rank != 1:
        raise ShapeError(f"invert_permutation expects a 1D vector (node '{node.name}', "
                         f"op {node.op})")
    vals = const_value(b, x)
    if vals is None:
        raise Unsupported(f"node '{node.name}' ({node.op}): the permutation is not known at "
                          "compile time")
    perm = [int(v) for v in vals.reshape(-1)]
    if sorted(perm) != list(range(len(perm))):  # TF's error, raised by TF at run time
        raise Unsupported(f"node '{node.name}' ({node.op}): {perm} is not a permutation")
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return [make_host(b, inv, x.dtype)]


RULES = [
    OpRule("InvertPermutation", lower_invert_permutation, {"T": INTS}, fusion="index",
           shape_rule=lambda env, shapes, attrs: [shapes[0]], const_inputs=(0,)),
]
