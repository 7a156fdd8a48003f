"""OpRule: everything the compiler knows about one TF op, in one place.

The registry built from these rules is also the clustering allow-list sent
to the C++ optimizer (registry.support_table), so an op is clustered only
with dtypes/attrs its rule accepts.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from ..dtypes import DType

# lower(builder, node, inputs) -> outputs
Lowering = Callable[..., list]
# dtype_rule(input dtypes, attrs) -> output dtypes
DTypeRule = Callable[[list, dict], list]
# shape_rule(env, input shapes, attrs) -> output shapes
ShapeRule = Callable[..., list]


def same_dtype(dts: list, attrs: dict) -> list:
    return [dts[0]]


def bool_dtype(dts: list, attrs: dict) -> list:
    from ..dtypes import BOOL
    return [BOOL]


def same_shape(env, shapes: list, attrs: dict) -> list:
    return [shapes[0]]


def broadcast_shape(env, shapes: list, attrs: dict) -> list:
    return [env.broadcast_shapes(*shapes)]


@dataclasses.dataclass(frozen=True)
class OpRule:
    name: str
    lower: Lowering
    # Allowed dtypes per type attr (e.g. {"T": FLOATS}).
    type_attrs: dict[str, tuple[DType, ...]]
    dtype_rule: DTypeRule = same_dtype
    shape_rule: ShapeRule = same_shape
    # elementwise: fused into loop kernels; passthrough: no code (Identity);
    # constant: materialized at compile time.
    fusion: str = "elementwise"
    # Allowed values of other attrs (absent attr = TF default, accepted).
    attr_values: dict[str, tuple] = dataclasses.field(default_factory=dict)
    const_inputs: tuple[int, ...] = ()  # -1: the last input (ConcatV2's axis)
    # Inputs read at run time (elements become dims) when the optimizer
    # proves them a scalar or short vector; else treated as const_inputs.
    value_inputs: tuple[int, ...] = ()
    num_outputs: int = 1
