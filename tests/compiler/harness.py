"""Runs a generated library on numpy inputs without the C++ op library:
a DiscRuntime whose function pointers are ctypes callbacks (outputs into
numpy arrays, parallel_for sequential in several chunks, errors recorded)."""
from __future__ import annotations

import ctypes

import numpy as np

MAX_RANK = 8


class DiscBuffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("rank", ctypes.c_int32),
                ("dims", ctypes.c_int64 * MAX_RANK)]


ParallelFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
AllocOutput = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                               ctypes.POINTER(ctypes.c_int64))
AllocTemp = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
FreeTemp = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
ParallelFor = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                               ParallelFn, ctypes.c_void_p)
SetError = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32, ctypes.c_char_p)


class DiscRuntime(ctypes.Structure):
    _fields_ = [("ctx", ctypes.c_void_p), ("alloc_output", AllocOutput),
                ("alloc_temp", AllocTemp), ("free_temp", FreeTemp),
                ("parallel_for", ParallelFor), ("set_error", SetError)]


class DiscError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"[{code}] {message}")
        self.code, self.message = code, message


_LIBS: dict[str, ctypes.CDLL] = {}


def _aligned(nbytes: int) -> tuple[np.ndarray, int]:
    raw = np.empty(nbytes + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw, raw.ctypes.data + off


class Executable:
    """One loaded library; call with numpy inputs and the output dtypes."""

    def __init__(self, path: str) -> None:
        if path not in _LIBS:
            _LIBS[path] = ctypes.CDLL(path)
        self.lib = _LIBS[path]
        self.lib.disc_abi_version.restype = ctypes.c_int32
        self.lib.disc_entry.restype = ctypes.c_int32
        assert self.lib.disc_abi_version() == 1
        self.parallel_calls = 0

    def __call__(self, inputs: list[np.ndarray], out_dtypes: list) -> list[np.ndarray]:
        inputs = [np.require(np.asarray(x), requirements="C") for x in inputs]
        outputs: dict[int, np.ndarray] = {}
        temps: dict[int, np.ndarray] = {}
        errors: list[tuple[int, str]] = []

        def alloc_output(ctx, index, rank, dims):
            shape = tuple(dims[i] for i in range(rank))
            assert index not in outputs, f"output {index} allocated twice"
            dt = np.dtype(out_dtypes[index])
            raw, ptr = _aligned(max(int(np.prod(shape, dtype=np.int64)), 1) * dt.itemsize)
            arr = np.frombuffer((ctypes.c_uint8 * (raw.size - (ptr - raw.ctypes.data)))
                                .from_address(ptr), dtype=np.uint8)
            outputs[index] = (raw, arr, shape, dt)
            return ptr

        def alloc_temp(ctx, nbytes):
            raw, ptr = _aligned(nbytes)
            temps[ptr] = raw
            return ptr

        def free_temp(ctx, ptr):
            assert ptr in temps, "free_temp of unknown pointer"
            del temps[ptr]

        def parallel_for(ctx, n, cost, fn, closure):
            self.parallel_calls += 1
            step = max(1, -(-n // 5))
            for b in range(0, n, step):
                fn(closure, b, min(n, b + step))

        def set_error(ctx, code, msg):
            errors.append((code, msg.decode()))

        rt = DiscRuntime(None, AllocOutput(alloc_output), AllocTemp(alloc_temp),
                         FreeTemp(free_temp), ParallelFor(parallel_for), SetError(set_error))
        bufs = (DiscBuffer * max(len(inputs), 1))()
        for i, x in enumerate(inputs):
            bufs[i].data = x.ctypes.data if x.size else None
            bufs[i].rank = x.ndim
            for j, d in enumerate(x.shape):
                bufs[i].dims[j] = d
        rc = self.lib.disc_entry(ctypes.byref(rt), bufs, len(inputs))
        if rc != 0:
            assert errors, "non-zero return without set_error"
            raise DiscError(*errors[0])
        assert not errors
        result = []
        for k in range(len(out_dtypes)):
            raw, arr, shape, dt = outputs[k]
            n = int(np.prod(shape, dtype=np.int64))
            result.append(arr[:n * dt.itemsize].view(dt).reshape(shape).copy())
        return result
