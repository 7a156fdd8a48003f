"""Which GEMM epilogues run inside the GEMM on CUDA: a bias add over the
last dim, then nothing, ReLU or tanh-GELU (cuBLASLt's BIAS, RELU_BIAS and
GELU_BIAS epilogues; DiscGemmArgs::bias/activation).  Any other epilogue
kernel (passes/gemm_epilogue.py) runs as its own loop kernel after the GEMM.

The activation is recognized by what it computes, not by how the graph
spells it: the region after the bias add must be a function of that sum
and scalar constants alone, and is evaluated on sample points against each
candidate (x * 0.5 * (1 + tanh(...)) and 0.5 * x * (...) are the same GELU;
erf-GELU is not tanh-GELU and stays a loop kernel)."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ... import dtypes
from ...ir.core import Func, Op, Value
from .ops import GEMM_DTYPES

_SAMPLES = np.concatenate([np.linspace(-8.0, 8.0, 161), [-1e-3, 1e-3, 30.0, -30.0]])


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


# (relative, absolute) difference from a candidate at which a region writing
# that type still computes it: two units in the last place of a 16-bit type
# (its constants, e.g. a GELU's 0.044715, are rounded to it), absolute near
# f16's smallest normal; erf-GELU differs from tanh-GELU by over 10% in its
# tails.  Float32 regions match to float32 rounding.
_TOLERANCE = {dtypes.F16: (2.0 ** -9, 2.0 ** -14), dtypes.BF16: (2.0 ** -6, 2.0 ** -14)}

ACTIVATIONS = {"DISC_ACT_NONE": lambda x: x,
               "DISC_ACT_RELU": lambda x: np.maximum(x, 0.0),
               "DISC_ACT_GELU_TANH": _gelu_tanh}

_EVAL = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
    "negate": np.negative, "tanh": np.tanh, "square": np.square, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x), "exponential": np.exp,
    "logistic": lambda x: 1.0 / (1.0 + np.exp(-x)), "relu": lambda x: np.maximum(x, 0.0),
    "copy": lambda x: x,
}


@dataclasses.dataclass(frozen=True)
class GemmEpilogue:
    bias: Value
    activation: str   # a DISC_ACT_* name


def gemm_epilogue(dot: Op, fusion: Op, func: Func) -> GemmEpilogue | None:
    """The bias and activation fusion computes on dot's result, when the
    GEMM can compute them itself and nothing else reads that result."""
    res = dot.result
    if res.dtype not in GEMM_DTYPES or "result_perm" in dot.attrs or res in func.rets:
        return None
    if len(fusion.results) != 1 or fusion.result.type != res.type:
        return None   # the GEMM writes the epilogue's buffer: same shape and type
    if any(res in op.operands for op in func.ops if op is not fusion):
        return None
    consts = {op.result: op.attrs["value"] for op in func.ops if op.name == "constant"}
    biased = _bias_add(fusion, res)
    if biased is None:
        return None
    y, bias = biased
    try:
        with np.errstate(all="ignore"):
            got = _evaluate(fusion, y, consts)
    except KeyError:
        return None
    rtol, atol = _TOLERANCE.get(fusion.result.dtype, (1e-6, 1e-6))
    for name, ref in ACTIVATIONS.items():
        want = ref(_SAMPLES)
        if np.all(np.abs(got - want) <= atol + rtol * np.abs(want)):
            return GemmEpilogue(bias, name)
    return None


def _float_convert(o: Op | None) -> bool:
    return o is not None and o.name == "convert" and o.operands[0].dtype.is_float \
        and o.result.dtype.is_float


def _unconverted(v: Value, producer: dict[Value, Op]) -> Value:
    """v before the float-to-float converts that produced it."""
    while _float_convert(producer.get(v)):
        v = producer[v].operands[0]
    return v


def _bias_add(fusion: Op, res: Value) -> tuple[Value, Value] | None:
    """(the region value dot result + broadcast bias, the bias vector); each
    side may be converted between float types first (a 16-bit dot's
    epilogue adds in float32: ops/half.py)."""
    rank = res.type.rank
    producer = {r: o for o in fusion.region.ops for r in o.results}
    for o in fusion.region.ops:
        sides = [_unconverted(x, producer) for x in o.operands]
        if o.name != "add" or res not in sides:
            continue
        b = producer.get(sides[1] if sides[0] is res else sides[0])
        if b is None or b.name != "broadcast_in_dim":
            return None
        bias = b.operands[0]
        if (bias in producer or bias.type.rank != 1 or bias.dtype != res.dtype
                or list(b.attrs["broadcast_dimensions"]) != [rank - 1]
                or bias.shape[0] != res.shape[-1]):
            return None
        return o.result, bias
    return None


def _evaluate(fusion: Op, y: Value, consts: dict) -> np.ndarray:
    """The region's output at y = _SAMPLES; KeyError when it reads anything
    but y and scalar constants (or an op _EVAL lacks) besides the bias add.
    Converts between float types are the identity: the GEMM's epilogue
    computes in float32 and rounds its result once, where TF rounds each
    16-bit op (within TF-on-GPU tolerances, as TF's own fused cuBLASLt
    epilogues)."""
    vals: dict[Value, np.ndarray] = {y: _SAMPLES}
    region = fusion.region

    def value(v: Value) -> np.ndarray:
        if v in vals:
            return vals[v]
        if v in consts and len(consts[v]) == 1:
            return np.float64(consts[v][0])
        raise KeyError(v.name)
    feeding = _feeding(region, y)
    for o in region.ops:
        if o in feeding:
            continue   # the bias add and its operands: y itself
        if o.name == "broadcast_in_dim" or _float_convert(o):
            vals[o.result] = value(o.operands[0])
            continue
        vals[o.result] = np.asarray(_EVAL[o.name](*[value(x) for x in o.operands]),
                                    dtype=np.float64) * np.ones_like(_SAMPLES)
    return np.broadcast_to(value(region.outputs[0]), _SAMPLES.shape)


def _feeding(region, y: Value) -> set[Op]:
    """The region ops y is computed from, y's own included."""
    producer = {r: o for o in region.ops for r in o.results}
    out: set[Op] = set()
    todo = [y]
    while todo:
        o = producer.get(todo.pop())
        if o is not None and o not in out:
            out.add(o)
            todo += o.operands
    return out
