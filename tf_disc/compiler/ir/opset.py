"""The IR op set: name -> arity and result-dtype rule (used by the
verifier and the builder).  Semantics of each op live in codegen/cpu/ops.py (one
C++ expression per op); the names follow MHLO where MHLO has the op.
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class IrOpSpec:
    arity: int            # -1: variadic
    kind: str             # elementwise | broadcast | constant | assert | fusion | library
    result: str = "same"  # same | bool | attr (result type given explicitly)
    # Ops that can fail per element (integer division by zero, ...).
    may_fail: bool = False


_UNARY = [
    "abs", "negate", "exponential", "exponential_minus_one", "log", "log_plus_one",
    "sqrt", "rsqrt", "square", "reciprocal", "sine", "cosine", "tan", "tanh",
    "logistic", "relu", "relu6", "elu", "selu", "leaky_relu", "softplus", "erf", "erfc",
    "floor", "ceil", "round_nearest_even", "sign", "not", "copy",
]
_UNARY_BOOL = ["is_nan", "is_inf", "is_finite"]
_BINARY = [
    "add", "subtract", "multiply", "divide", "div_no_nan", "floor_div_float",
    "floor_mod_float", "maximum", "minimum", "power", "squared_difference",
    "atan2", "and", "or",
]
_BINARY_FAILING = ["div_int", "floor_div_int", "floor_mod_int", "power_int"]

OPSET: dict[str, IrOpSpec] = {}
OPSET.update({n: IrOpSpec(1, "elementwise") for n in _UNARY})
OPSET.update({n: IrOpSpec(1, "elementwise", "bool") for n in _UNARY_BOOL})
OPSET.update({n: IrOpSpec(2, "elementwise") for n in _BINARY})
OPSET.update({n: IrOpSpec(2, "elementwise", may_fail=True) for n in _BINARY_FAILING})
OPSET.update({
    "compare": IrOpSpec(2, "elementwise", "bool"),
    "select": IrOpSpec(3, "elementwise", "attr"),
    "convert": IrOpSpec(1, "elementwise", "attr"),
    "broadcast_in_dim": IrOpSpec(1, "broadcast", "same"),
    "constant": IrOpSpec(0, "constant", "attr"),
    "assert_broadcastable": IrOpSpec(0, "assert"),
    "assert_same_shape": IrOpSpec(0, "assert"),
    "assert_dim_eq": IrOpSpec(0, "assert"),
    "fusion": IrOpSpec(-1, "fusion", "attr"),
    # Row kernel: last-dim reductions with their elementwise producers and
    # consumers (passes/stitch.py, codegen/cpu/stitch.py); attr row_shape.
    "stitch": IrOpSpec(-1, "fusion", "attr"),
})
# Shape/layout ops (ops/shape_ops.py; C++ in codegen/index_ops.py).  "index"
# ops read materialized buffers at positions computed from the output's
# multi-index; they fuse with elementwise consumers (a kernel holding one
# walks the multi-index).  Dims in their attrs are dim strings.
OPSET.update({
    "view": IrOpSpec(1, "index", "same"),         # offset = base + sum idx[d]*strides[d]
    "reshape": IrOpSpec(1, "index", "same"),      # same row-major flat index
    "tile": IrOpSpec(1, "index", "same"),
    "pad": IrOpSpec(2, "index", "same"),          # (x, scalar pad value), attr lo
    "concatenate": IrOpSpec(-1, "index", "same"),  # attr dimension
    "gather": IrOpSpec(2, "index", "attr", may_fail=True),  # (params, indices), attr axis
    "iota": IrOpSpec(0, "index", "attr"),         # attr dimension
    # (list, index, item): the list with row `index` replaced by item
    # (ops/tensor_list.py); a loop updates it in place (passes/program.py),
    # elsewhere passes/list_sets.py expands it to a select.
    "list_set": IrOpSpec(3, "index", "same", may_fail=True),
    # Host side: a small int tensor whose elements are dims (attr "dims").
    "dims_tensor": IrOpSpec(0, "host", "attr"),
    # Own kernels (codegen/cpu/reduce.py), operands materialized.
    "reduce": IrOpSpec(1, "library", "same"),     # attrs kind, dimensions
    "argreduce": IrOpSpec(1, "library", "attr"),  # attrs kind, dimension
    "cumsum": IrOpSpec(1, "library", "same"),     # attrs axis, exclusive, reverse
    "topk": IrOpSpec(1, "library", "attr"),       # attrs k (a dim), output values|indices
    # (data, indices, segment_ids), attr kind sum|mean|sqrtn: ops/segment.py
    "segment_reduce": IrOpSpec(3, "library", "same", may_fail=True),
    # (indices..., data...), attr n: ops/dynamic_stitch.py, codegen/cpu/scatter.py
    "dynamic_stitch": IrOpSpec(-1, "library", "same", may_fail=True),
    # (segment_ids, data): ops/unsorted_segment.py, codegen/cpu/scatter.py
    "segment_sum": IrOpSpec(2, "library", "attr", may_fail=True),
    # labels -> labels, checked in [0, attr classes): ops/sparse_xent.py, codegen/labels.py
    "label_check": IrOpSpec(1, "library", "same", may_fail=True),
})
REDUCE_KINDS = ("sum", "prod", "max", "min", "and", "or", "max_ignore_nan")
# Library ops: run by the runtime (own top-level call, not fused); their
# computed operands are materialized, consumers read their result buffers.
OPSET.update({
    "dot": IrOpSpec(2, "library"),  # ir/dot.py, codegen/gemm.py
    "window": IrOpSpec(-1, "library"),  # (x[, filter]): ops/nn_conv.py, codegen/conv.py
})

# Control flow (ir/control.py): a `while`'s operands are the loop's initial
# values, results its final ones, op.funcs holds [cond, body]; an `if` or
# `case` takes a predicate or branch index and the branches' arguments,
# op.funcs holds the branches.  Programs (passes/program.py) split a
# function at these ops before the pipeline.
OPSET.update({name: IrOpSpec(-1, "control", "attr") for name in ("while", "if", "case")})

COMPARE_DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")


def spec(name: str) -> IrOpSpec:
    try:
        return OPSET[name]
    except KeyError:
        raise ValueError(f"unknown IR op {name!r}") from None
