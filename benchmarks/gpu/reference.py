"""The harness's cases as TF computes them, op by op, written once against a
small array namespace: run with NumpyOps here (tests check them against
stock TF in float64), and with TorchOps on the GPU machine, where they are
both the float64 reference of large shapes and "PyTorch eager running TF's
decomposition" in the timing table.  FUSED holds the same cases through
PyTorch's fused kernels (F.gelu, F.softmax, F.layer_norm, addmm).

Each function takes the case's inputs in manifest order and returns a tuple
of outputs, as the generated library's disc_entry does."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

SQRT_HALF = 1.0 / math.sqrt(2.0)
TANH_C = math.sqrt(2.0 / math.pi)
HIDDEN, HEADS = 768, 12


class NumpyOps:
    """numpy (CPU, any dtype numpy has)."""
    def __init__(self) -> None:
        try:
            from scipy.special import erf, erfc
        except ImportError:  # math's, element by element: small shapes only
            erf = np.vectorize(math.erf, otypes=[np.float64])
            erfc = np.vectorize(math.erfc, otypes=[np.float64])
        self.erf, self.erfc = erf, erfc
        self.tanh, self.exp, self.sqrt, self.abs = np.tanh, np.exp, np.sqrt, np.abs
        self.relu = lambda x: np.maximum(x, 0)

    @staticmethod
    def sum(x, axis, keepdims=False):
        return np.sum(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def max(x, axis, keepdims=False):
        return np.max(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def permute(x, axes):
        return np.transpose(x, axes)


class TorchOps:
    """torch tensors (the GPU machine)."""
    def __init__(self) -> None:
        import torch
        self.torch = torch
        self.erf, self.erfc = torch.erf, torch.erfc
        self.tanh, self.exp = torch.tanh, torch.exp
        self.sqrt, self.abs, self.relu = torch.sqrt, torch.abs, torch.relu

    def sum(self, x, axis, keepdims=False):
        return self.torch.sum(x, dim=axis, keepdim=keepdims)

    def max(self, x, axis, keepdims=False):
        return self.torch.amax(x, dim=axis, keepdim=keepdims)

    @staticmethod
    def permute(x, axes):
        return x.permute(*axes)


def _mean(o, x, axis):
    return o.sum(x, axis, keepdims=True) * (1.0 / x.shape[axis])


def gelu_erfc(o, y):
    # tf.nn.gelu(approximate=False): erfc(-y/√2), exact where 1 + erf(y/√2)
    # cancels (y << 0).
    return 0.5 * y * o.erfc(-y * SQRT_HALF)


def gelu_erf(o, y):
    # benchmarks/models/transformer.py's gelu (the BERT layer's).
    return 0.5 * y * (1.0 + o.erf(y * SQRT_HALF))


def gelu_tanh(o, y):
    return 0.5 * y * (1.0 + o.tanh(TANH_C * (y + 0.044715 * (y * y * y))))


def softmax(o, x):
    e = o.exp(x - o.max(x, -1, keepdims=True))
    return (e / o.sum(e, -1, keepdims=True),)


def layer_norm(o, x, g, b, eps=1e-12):
    mean = _mean(o, x, -1)
    d = x - mean
    var = _mean(o, d * d, -1)
    return ((x - mean) * (1.0 / o.sqrt(var + eps)) * g + b,)


def _bert_layer(o, x, bias, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, w1, c1, w2, c2, g2, b2):
    """cuda_cases.bert_layer: post-LN attention + GELU(erf) FFN."""
    batch, seq = x.shape[0], x.shape[1]
    x2d = x.reshape(batch * seq, HIDDEN)

    def heads(t):
        return o.permute(t.reshape(batch, seq, HEADS, HIDDEN // HEADS), (0, 2, 1, 3))

    q = heads((x2d @ wq + bq) * (1.0 / math.sqrt(HIDDEN // HEADS)))
    k, v = heads(x2d @ wk + bk), heads(x2d @ wv + bv)
    (p,) = softmax(o, q @ o.permute(k, (0, 1, 3, 2)) + bias)
    ctx = o.permute(p @ v, (0, 2, 1, 3)).reshape(batch * seq, HIDDEN)
    (x2d,) = layer_norm(o, x2d + (ctx @ wo + bo), g1, b1)
    h = gelu_erf(o, x2d @ w1 + c1) @ w2 + c2
    (out,) = layer_norm(o, x2d + h, g2, b2)
    return (out.reshape(batch, seq, HIDDEN),)


# op name (manifest "op") -> f(ops, *inputs) -> outputs, TF's semantics.
REFERENCES: dict[str, Callable[..., tuple]] = {
    "bias_gelu_erf": lambda o, x, b: (gelu_erfc(o, x + b),),
    "bias_gelu_tanh": lambda o, x, b: (gelu_tanh(o, x + b),),
    "broadcast_chain": lambda o, x, y, z: (o.relu(x * y - z) / (1.0 + o.abs(y)),),
    "softmax": softmax,
    "layer_norm": layer_norm,
    "column_sum": lambda o, x: (o.sum(x, 0),),
    "dense": lambda o, x, w, b: (x @ w + b,),
    "dense_gelu_erf": lambda o, x, w, b: (gelu_erfc(o, x @ w + b),),
    "dense_gelu_tanh": lambda o, x, w, b: (gelu_tanh(o, x @ w + b),),
    "qk": lambda o, q, k: (q @ o.permute(k, (0, 1, 3, 2)),),
    "bert_layer": _bert_layer,
}


def fused_ops() -> dict[str, Callable[..., tuple]]:
    """The cases through PyTorch's fused ops (None: PyTorch has none)."""
    import torch
    import torch.nn.functional as F
    return {
        "bias_gelu_erf": lambda x, b: (F.gelu(x + b),),
        "bias_gelu_tanh": lambda x, b: (F.gelu(x + b, approximate="tanh"),),
        "softmax": lambda x: (F.softmax(x, dim=-1),),
        "layer_norm": lambda x, g, b: (F.layer_norm(x, (x.shape[-1],), g, b, eps=1e-12),),
        "column_sum": lambda x: (torch.sum(x, 0),),
        "dense": lambda x, w, b: (torch.addmm(b, x, w),),
        "dense_gelu_erf": lambda x, w, b: (F.gelu(torch.addmm(b, x, w)),),
        "dense_gelu_tanh": lambda x, w, b: (F.gelu(torch.addmm(b, x, w), approximate="tanh"),),
        "qk": lambda q, k: (torch.matmul(q, k.transpose(-1, -2)),),
    }


def abs_scale(op: str, ops: Any, inputs: list) -> np.ndarray | None:
    """The float64 scale of a "sum" tolerance: the op on |inputs| (Σ|x| of a
    reduction, Σ|a||b| + |bias| of a GEMM); None for other ops."""
    if op not in SUM_SCALED:
        return None
    (scale,) = REFERENCES[SUM_SCALED[op]](ops, *[ops.abs(x) for x in inputs])
    return scale


# Ops whose error grows with Σ|terms|, and the op that gives that sum (a
# GELU epilogue is bounded through its linear part: |gelu'| <= 1.13).
SUM_SCALED = {"column_sum": "column_sum", "dense": "dense", "dense_gelu_erf": "dense",
              "dense_gelu_tanh": "dense", "qk": "qk"}
