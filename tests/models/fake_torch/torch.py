"""A stand-in for the slice of torch that benchmarks/gpu/run_cases.py uses,
over numpy, so that its GPU path (GpuRun: stream, events, caching-allocator
callbacks, references, timing, torch.compile bookkeeping, the table) runs in
tests on machines without torch or a GPU.  "cuda" tensors are host arrays
(the CUDA driver stand-in never touches them); events read the host clock.
Numbers it yields mean nothing: only that the code paths run."""
from __future__ import annotations

import collections
import contextlib
import sys
import time
import types

import numpy as np

__version__ = "0.0-fake"
version = types.SimpleNamespace(cuda="fake")
float16, float32, float64, int32 = np.float16, np.float32, np.float64, np.int32


class Tensor(np.ndarray):
    """An ndarray with the tensor methods run_cases.py and reference.py call."""

    def double(self):
        return self.astype(np.float64)

    def cpu(self):
        return self

    def detach(self):
        return self

    def numpy(self):
        return np.asarray(self)

    def to(self, device, non_blocking=False):
        return self

    def numel(self):
        return int(self.size)

    def element_size(self):
        return int(self.itemsize)

    def data_ptr(self):
        return int(self.ctypes.data)

    def copy_(self, other):
        self[...] = other
        return self

    def permute(self, *axes):
        return np.transpose(self, axes)


def _t(x) -> Tensor:
    return np.asarray(x).view(Tensor)


def from_numpy(x):
    return _t(x)


def empty(shape, dtype=float32, device="cpu"):
    return _t(np.empty(shape, dtype))


def ones(*shape, device="cpu", dtype=float32):
    return _t(np.ones(shape, dtype))


def empty_like(x):
    return _t(np.empty_like(x))


def sum(x, dim, keepdim=False):  # noqa: A001 - torch's name
    return _t(np.sum(x, axis=dim, keepdims=keepdim))


def amax(x, dim, keepdim=False):
    return _t(np.max(x, axis=dim, keepdims=keepdim))


def _erf(x):
    from scipy.special import erf
    return _t(erf(x))


def _erfc(x):
    from scipy.special import erfc
    return _t(erfc(x))


erf, erfc = _erf, _erfc
tanh, exp, sqrt, abs = np.tanh, np.exp, np.sqrt, np.abs  # noqa: A001


def relu(x):
    return _t(np.maximum(x, 0))


def matmul(a, b):
    return _t(a @ b)


def addmm(bias, a, b):
    return _t(a @ b + bias)


def compile(fn, dynamic=False):  # noqa: A001 - torch's name
    return fn  # no graphs: _dynamo's counters stay at zero


class _Stream:
    cuda_stream = 0x5eed  # any non-null handle: the driver stand-in ignores it


class _Event:
    def __init__(self, enable_timing=False):
        self.t = 0.0

    def record(self):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return (other.t - self.t) * 1e3


cuda = types.SimpleNamespace(
    Stream=_Stream, Event=_Event, synchronize=lambda: None,
    get_device_name=lambda: "fake device", stream=lambda s: contextlib.nullcontext())
backends = types.SimpleNamespace(cuda=types.SimpleNamespace(
    matmul=types.SimpleNamespace(allow_tf32=False)))


def _module(name: str, **attrs) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return _t(0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))))
    return _t(0.5 * x * _erfc(-x / np.sqrt(2)))


def _softmax(x, dim):
    e = np.exp(x - np.max(x, axis=dim, keepdims=True))
    return _t(e / np.sum(e, axis=dim, keepdims=True))


def _layer_norm(x, shape, g, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    return _t((x - mean) / np.sqrt(x.var(-1, keepdims=True) + eps) * g + b)


_counters = collections.defaultdict(collections.Counter)
nn = _module("torch.nn", functional=_module("torch.nn.functional", gelu=_gelu,
                                            softmax=_softmax, layer_norm=_layer_norm))
_dynamo = _module("torch._dynamo", utils=_module("torch._dynamo.utils", counters=_counters))
