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
_I32 = ctypes.c_int32
_PTR = ctypes.c_void_p


class DiscGemmArgs(ctypes.Structure):
    _fields_ = [("dtype", _I32), ("trans_a", _I32), ("trans_b", _I32), ("batch", _I64),
                ("m", _I64), ("n", _I64), ("k", _I64), ("a", _PTR), ("lda", _I64),
                ("stride_a", _I64), ("b", _PTR), ("ldb", _I64), ("stride_b", _I64),
                ("c", _PTR), ("ldc", _I64), ("stride_c", _I64), ("epilogue", _PTR),
                ("closure", _PTR), ("c_offset", _I64), ("bias", _PTR), ("activation", _I32)]


class DiscGemmPart(ctypes.Structure):
    _fields_ = [("b", _PTR), ("ldb", _I64), ("n", _I64), ("c", _PTR), ("ldc", _I64),
                ("epilogue", _PTR), ("closure", _PTR), ("c_offset", _I64)]


class DiscGemmMultiArgs(ctypes.Structure):
    _fields_ = [("dtype", _I32), ("trans_a", _I32), ("trans_b", _I32), ("m", _I64),
                ("k", _I64), ("a", _PTR), ("lda", _I64), ("num_parts", _I32),
                ("parts", ctypes.POINTER(DiscGemmPart))]


Gemm = ctypes.CFUNCTYPE(_I32, _PTR, ctypes.POINTER(DiscGemmArgs))
GemmMulti = ctypes.CFUNCTYPE(_I32, _PTR, ctypes.POINTER(DiscGemmMultiArgs))
# The harness has no `window` (convolutions/pooling): a library that calls it
# gets an error, the others run.
Window = ctypes.CFUNCTYPE(_I32, _PTR, _PTR)
ABI_VERSION = abi_version()  # runtime/disc_abi.h's, not a copy that goes stale
DEVICE_CPU = 0  # DISC_DEVICE_CPU


class DiscRuntime(ctypes.Structure):
    _fields_ = [("ctx", _PTR), ("device", _I32), ("stream", _PTR),
                ("alloc_output", AllocOutput), ("alloc_temp", AllocTemp),
                ("free_temp", FreeTemp), ("parallel_for", ParallelFor),
                ("set_error", SetError), ("gemm", Gemm), ("gemm_multi", GemmMulti),
                ("window", Window), ("launch", _PTR), ("device_info", _PTR),
                ("memset_async", _PTR), ("memcpy_async", _PTR), ("sync", _PTR)]


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


def _matmul(g: DiscGemmArgs) -> int:
    """C := op(A) op(B) for one DiscGemmArgs in numpy (float64 accumulation);
    non-zero for an unsupported dtype or negative sizes."""
    dt = _GEMM_DTYPES.get(g.dtype)
    if dt is None or min(g.batch, g.m, g.n, g.k) < 0:
        return 1
    if g.batch == 0 or g.m == 0 or g.n == 0:
        return 0
    out = _strided(g.c, dt, (g.batch, g.m, g.n), (g.stride_c, g.ldc, 1))
    if g.k == 0:
        out[...] = 0
        return 0
    av = _strided(g.a, dt, (g.batch, g.k, g.m) if g.trans_a else (g.batch, g.m, g.k),
                  (g.stride_a, g.lda, 1))
    bv = _strided(g.b, dt, (g.batch, g.n, g.k) if g.trans_b else (g.batch, g.k, g.n),
                  (g.stride_b, g.ldb, 1))
    av = av.transpose(0, 2, 1) if g.trans_a else av
    bv = bv.transpose(0, 2, 1) if g.trans_b else bv
    out[...] = np.matmul(av.astype(np.float64), bv.astype(np.float64)).astype(dt)
    return 0


def _run_epilogue(g: DiscGemmArgs) -> None:
    """The epilogue over each row of C in pieces of at most 7 columns, last
    row first (any order and split is allowed)."""
    fn = ParallelFn(g.epilogue)
    for bi in reversed(range(g.batch)):
        for r in reversed(range(g.m)):
            row = g.c_offset + bi * g.stride_c + r * g.ldc
            for j in range(0, g.n, 7):
                fn(g.closure, row + j, row + min(g.n, j + 7))


def reference_gemm(calls: list, errors: list):
    """rt->gemm in numpy: the product, then its epilogue if any; each call's
    sizes are recorded (with "epilogue": True when it has one)."""
    def gemm(ctx, args):
        g = args.contents
        calls.append(dict(dtype=g.dtype, trans_a=g.trans_a, trans_b=g.trans_b, batch=g.batch,
                          m=g.m, n=g.n, k=g.k, lda=g.lda, ldb=g.ldb, ldc=g.ldc,
                          stride_a=g.stride_a, stride_b=g.stride_b, stride_c=g.stride_c))
        if _matmul(g):
            errors.append((13, f"gemm: unsupported dtype {g.dtype}"))
            return 1
        if g.epilogue:
            calls[-1]["epilogue"] = True
            _run_epilogue(g)
        return 0
    return gemm


def reference_gemm_multi(gemm, calls: list):
    """rt->gemm_multi: one rt->gemm per part, last part first (any order is
    allowed); each part's call is recorded with "multi": the part count."""
    def run(ctx, args):
        g = args.contents
        for i in reversed(range(g.num_parts)):
            p = g.parts[i]
            part = DiscGemmArgs(g.dtype, g.trans_a, g.trans_b, 1, g.m, p.n, g.k, g.a, g.lda, 0,
                                p.b, p.ldb, 0, p.c, p.ldc, 0, p.epilogue, p.closure, p.c_offset)
            rc = gemm(ctx, ctypes.pointer(part))
            calls[-1]["multi"] = g.num_parts
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
        self.lib.disc_device.restype = ctypes.c_int32
        self.lib.disc_entry.restype = ctypes.c_int32
        assert self.lib.disc_abi_version() == ABI_VERSION
        assert self.lib.disc_device() == DEVICE_CPU
        self.parallel_calls = 0
        self.gemm_calls: list[dict] = []
        self.peak_temp_bytes = 0  # most scratch live at once in the last call

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
            self.peak_temp_bytes = max(self.peak_temp_bytes,
                                       sum(t.nbytes for t in temps.values()))
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
        self.peak_temp_bytes = 0
        gemm = reference_gemm(self.gemm_calls, errors)
        rt = DiscRuntime(None, DEVICE_CPU, None, AllocOutput(alloc_output),
                         AllocTemp(alloc_temp), FreeTemp(free_temp), ParallelFor(parallel_for),
                         SetError(set_error), Gemm(gemm),
                         GemmMulti(reference_gemm_multi(gemm, self.gemm_calls)),
                         Window(lambda ctx, args: errors.append((12, "harness: no window")) or 1))
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
