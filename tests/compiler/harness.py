"""Runs a generated library on numpy inputs without the C++ op library:
a DiscRuntime whose function pointers are ctypes callbacks (outputs into
numpy arrays, parallel_for sequential in several chunks, errors recorded)."""
from __future__ import annotations

import ctypes

import numpy as np

from blade_disc_tf.compiler.codegen.abi import abi_version

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
_I64 = ctypes.c_int64
Gemm = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                        ctypes.c_int32, _I64, _I64, _I64, _I64, ctypes.c_void_p, _I64, _I64,
                        ctypes.c_void_p, _I64, _I64, ctypes.c_void_p, _I64, _I64)
# Version 3 appended `window` (convolutions/pooling); the harness has none:
# a library that calls it gets an error, the others run as before.
Window = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)
# Version 4 appended fields to DiscWindowArgs; version 5 `gemm_epilogue`:
# rt->gemm, then the epilogue kernel; version 6 the window kind CONV_TRANSPOSE;
# version 7 the set_error code DISC_ERROR_FALLBACK (an error here); version 8
# the depthwise gradient window kinds.
GemmEpilogue = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                                ctypes.c_int32, _I64, _I64, _I64, _I64, ctypes.c_void_p, _I64,
                                _I64, ctypes.c_void_p, _I64, _I64, ctypes.c_void_p, _I64, _I64,
                                ctypes.c_void_p, ctypes.c_void_p, _I64)
# Version 9 `gemm_multi` (parts: DiscGemmPart).


class DiscGemmPart(ctypes.Structure):
    _fields_ = [("b", ctypes.c_void_p), ("ldb", _I64), ("n", _I64), ("c", ctypes.c_void_p),
                ("ldc", _I64), ("epilogue", ctypes.c_void_p), ("closure", ctypes.c_void_p),
                ("c_offset", _I64)]


GemmMulti = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                             ctypes.c_int32, _I64, _I64, ctypes.c_void_p, _I64, ctypes.c_int32,
                             ctypes.POINTER(DiscGemmPart))
ABI_VERSION = abi_version()  # runtime/disc_abi.h's, not a copy that goes stale


class DiscRuntime(ctypes.Structure):
    _fields_ = [("ctx", ctypes.c_void_p), ("alloc_output", AllocOutput),
                ("alloc_temp", AllocTemp), ("free_temp", FreeTemp),
                ("parallel_for", ParallelFor), ("set_error", SetError),
                ("gemm", Gemm), ("window", Window), ("gemm_epilogue", GemmEpilogue),
                ("gemm_multi", GemmMulti)]


_GEMM_DTYPES = {1: np.float32, 2: np.float64}


def _strided(ptr: int, dt, shape: tuple, strides: tuple) -> np.ndarray:
    """A numpy view of raw memory (element strides); None-safe for empty."""
    if any(d == 0 for d in shape):
        return np.zeros(shape, dt)
    span = 1 + sum((d - 1) * s for d, s in zip(shape, strides))
    base = np.ctypeslib.as_array((ctypes.c_uint8 * (span * np.dtype(dt).itemsize))
                                 .from_address(ptr)).view(dt)
    isz = np.dtype(dt).itemsize
    return np.lib.stride_tricks.as_strided(base, shape, tuple(s * isz for s in strides))


def reference_gemm(calls: list, errors: list):
    """rt->gemm in numpy (float64 accumulation), recording each call's sizes."""
    def gemm(ctx, dtype, ta, tb, batch, m, n, k, a, lda, sa, b, ldb, sb, c, ldc, sc):
        calls.append(dict(dtype=dtype, trans_a=ta, trans_b=tb, batch=batch, m=m, n=n, k=k,
                          lda=lda, ldb=ldb, ldc=ldc, stride_a=sa, stride_b=sb, stride_c=sc))
        dt = _GEMM_DTYPES.get(dtype)
        if dt is None or min(batch, m, n, k) < 0:
            errors.append((13, f"gemm: unsupported dtype {dtype}"))
            return 1
        if batch == 0 or m == 0 or n == 0:
            return 0
        out = _strided(c, dt, (batch, m, n), (sc, ldc, 1))
        if k == 0:
            out[...] = 0
            return 0
        av = _strided(a, dt, (batch, k, m) if ta else (batch, m, k), (sa, lda, 1))
        bv = _strided(b, dt, (batch, n, k) if tb else (batch, k, n), (sb, ldb, 1))
        av = av.transpose(0, 2, 1) if ta else av
        bv = bv.transpose(0, 2, 1) if tb else bv
        out[...] = np.matmul(av.astype(np.float64), bv.astype(np.float64)).astype(dt)
        return 0
    return gemm


def reference_gemm_epilogue(gemm, calls: list):
    """rt->gemm_epilogue: gemm, then the epilogue over each row of C in
    pieces of at most 7 columns, last row first (any order and split is
    allowed); the call is recorded with "epilogue": True."""
    def run(ctx, dtype, ta, tb, batch, m, n, k, a, lda, sa, b, ldb, sb, c, ldc, sc, ep, epc,
            off):
        rc = gemm(ctx, dtype, ta, tb, batch, m, n, k, a, lda, sa, b, ldb, sb, c, ldc, sc)
        if not ep:  # NULL: rt->gemm
            return rc
        calls[-1]["epilogue"] = True
        if rc:
            return 1
        fn = ParallelFn(ep)
        for bi in reversed(range(batch)):
            for r in reversed(range(m)):
                row = off + bi * sc + r * ldc
                for j in range(0, n, 7):
                    fn(epc, row + j, row + min(n, j + 7))
        return 0
    return run


def reference_gemm_multi(gemm_epilogue, calls: list):
    """rt->gemm_multi: gemm_epilogue per part, last part first (any order is
    allowed); each part's call is recorded with "multi": the part count."""
    def run(ctx, dtype, ta, tb, m, k, a, lda, num_parts, parts):
        for i in reversed(range(num_parts)):
            p = parts[i]
            rc = gemm_epilogue(ctx, dtype, ta, tb, 1, m, p.n, k, a, lda, 0, p.b, p.ldb, 0, p.c,
                               p.ldc, 0, p.epilogue, p.closure, p.c_offset)
            calls[-1]["multi"] = num_parts
            if rc:
                return 1
        return 0
    return run


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
        assert self.lib.disc_abi_version() == ABI_VERSION
        self.parallel_calls = 0
        self.gemm_calls: list[dict] = []

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

        self.gemm_calls = []
        gemm = reference_gemm(self.gemm_calls, errors)
        epilogue = reference_gemm_epilogue(gemm, self.gemm_calls)
        rt = DiscRuntime(None, AllocOutput(alloc_output), AllocTemp(alloc_temp),
                         FreeTemp(free_temp), ParallelFor(parallel_for), SetError(set_error),
                         Gemm(gemm),
                         Window(lambda ctx, args: errors.append((12, "harness: no window")) or 1),
                         GemmEpilogue(epilogue), GemmMulti(reference_gemm_multi(epilogue,
                                                                                self.gemm_calls)))
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
