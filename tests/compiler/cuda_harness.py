"""Runs the host code of a generated CUDA library without a GPU: a
DiscRuntime (harness.py's ctypes structures) whose device entries are
mocks.  Buffers are host memory, launch records the kernel, its geometry
and a copy of its argument bytes instead of running it, gemm records its
DiscGemmArgs, and device_info answers for an H100-like device.  What it
checks is the host's side of the contract: shape checks before any launch,
the schedule chosen from run-time dims and pointers, kernel ids that name
the exported table's entries, and the arguments each launch gets."""
from __future__ import annotations

import ctypes
import dataclasses
import re

import numpy as np

from .harness import (ABI_VERSION, AllocOutput, AllocTemp, DiscBuffer, DiscError, DiscGemmArgs,
                      DiscRuntime, FreeTemp, Gemm, GemmMulti, ParallelFor, SetError, Window,
                      _aligned)

DEVICE_CUDA = 1  # DISC_DEVICE_CUDA


class DiscLaunchDims(ctypes.Structure):
    _fields_ = [("grid", ctypes.c_uint32 * 3), ("block", ctypes.c_uint32 * 3),
                ("smem", ctypes.c_uint32)]


class DiscDeviceInfo(ctypes.Structure):
    _fields_ = [("sm_count", ctypes.c_int32), ("cc_major", ctypes.c_int32),
                ("cc_minor", ctypes.c_int32), ("max_threads_per_sm", ctypes.c_int32),
                ("smem_per_block_optin", ctypes.c_int32), ("l2_bytes", ctypes.c_int64)]


Launch = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32,
                          ctypes.POINTER(DiscLaunchDims), ctypes.c_void_p, ctypes.c_size_t)
DeviceInfo = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(DiscDeviceInfo))
H100 = dict(sm_count=132, cc_major=9, cc_minor=0, max_threads_per_sm=2048,
            smem_per_block_optin=227 * 1024, l2_bytes=50 * 1024 * 1024)


@dataclasses.dataclass
class LaunchRecord:
    kernel: int
    name: str
    grid: tuple
    block: tuple
    smem: int
    args: bytes

    def field(self, layout: dict[str, int], name: str, index: int = 0) -> int:
        """An int64/pointer field of the argument bytes (args.h's layout)."""
        at = layout[name] + 8 * index
        return int.from_bytes(self.args[at:at + 8], "little", signed=True)


def args_layouts(args_h: str) -> dict[str, dict[str, int]]:
    """struct name -> field -> offset, from args.h's static_asserts."""
    out: dict[str, dict[str, int]] = {}
    for s, f, off in re.findall(r"offsetof\((\w+)_args, (\w+)\) == (\d+)", args_h):
        out.setdefault(s, {})[f] = int(off)
    return out


class MockCudaLibrary:
    """One generated CUDA library; call() runs its host code on numpy arrays."""

    def __init__(self, path: str) -> None:
        self.lib = ctypes.CDLL(path)
        for fn in ("disc_abi_version", "disc_device", "disc_entry", "disc_cuda_kernel_count"):
            getattr(self.lib, fn).restype = ctypes.c_int32
        self.lib.disc_cuda_kernel_name.restype = ctypes.c_char_p
        self.lib.disc_cuda_kernel_name.argtypes = [ctypes.c_int32]
        self.lib.disc_cuda_image.restype = ctypes.c_void_p
        self.lib.disc_cuda_image.argtypes = [ctypes.POINTER(ctypes.c_size_t)]
        assert self.lib.disc_abi_version() == ABI_VERSION
        assert self.lib.disc_device() == DEVICE_CUDA

    def kernel_names(self) -> list[str]:
        return [self.lib.disc_cuda_kernel_name(i).decode()
                for i in range(self.lib.disc_cuda_kernel_count())]

    def image(self) -> bytes:
        size = ctypes.c_size_t()
        ptr = self.lib.disc_cuda_image(ctypes.byref(size))
        return ctypes.string_at(ptr, size.value)

    def call(self, inputs: list[np.ndarray], offsets: list[int] | None = None
             ) -> tuple[list[LaunchRecord], list[DiscGemmArgs], list[tuple[int, str]]]:
        """Runs disc_entry; offsets[i] bytes shift input i's data pointer (a
        misaligned view).  Returns (launches, gemm calls, errors); the
        inputs' data pointers are in self.input_ptrs after the call."""
        names = self.kernel_names()
        launches: list[LaunchRecord] = []
        gemms: list[DiscGemmArgs] = []
        errors: list[tuple[int, str]] = []
        keep: list = []

        def alloc(nbytes: int) -> int:
            raw, ptr = _aligned(max(nbytes, 1))
            keep.append(raw)
            return ptr

        def alloc_output(ctx, index, rank, dims):
            n = int(np.prod([dims[i] for i in range(rank)], dtype=np.int64))
            return alloc(n * 8)

        def launch(ctx, kernel, dims, args, size):
            d = dims.contents
            assert 0 <= kernel < len(names), f"kernel id {kernel} outside the table"
            launches.append(LaunchRecord(kernel, names[kernel], tuple(d.grid), tuple(d.block),
                                         d.smem, ctypes.string_at(args, size)))
            return 0

        def device_info(ctx, out):
            for k, v in H100.items():
                setattr(out.contents, k, v)
            return 0

        def gemm(ctx, g):
            gemms.append(DiscGemmArgs.from_buffer_copy(g.contents))
            return 0

        def unused(*args):
            errors.append((13, "mock: unexpected runtime call"))
            return 1

        callbacks = [Launch(launch), DeviceInfo(device_info)]
        rt = DiscRuntime(None, DEVICE_CUDA, None, AllocOutput(alloc_output),
                         AllocTemp(lambda ctx, n: alloc(n)), FreeTemp(lambda ctx, p: None),
                         ParallelFor(lambda *a: unused()),
                         SetError(lambda ctx, code, msg: errors.append((code, msg.decode()))),
                         Gemm(gemm), GemmMulti(lambda ctx, g: unused()),
                         Window(lambda ctx, a: unused()))
        rt.launch = ctypes.cast(callbacks[0], ctypes.c_void_p)
        rt.device_info = ctypes.cast(callbacks[1], ctypes.c_void_p)
        bufs = (DiscBuffer * max(len(inputs), 1))()
        self.input_ptrs = []
        for i, x in enumerate(inputs):
            x = np.require(np.asarray(x), requirements="C")
            shift = (offsets or [0] * len(inputs))[i]
            raw = np.zeros(x.nbytes + 64 + shift, np.uint8)
            base = raw.ctypes.data + (-raw.ctypes.data) % 64 + shift
            ctypes.memmove(base, x.ctypes.data, x.nbytes)
            keep.append(raw)
            bufs[i].data = base
            self.input_ptrs.append(base)
            bufs[i].rank = x.ndim
            for j, d in enumerate(x.shape):
                bufs[i].dims[j] = d
        rc = self.lib.disc_entry(ctypes.byref(rt), bufs, len(inputs))
        if rc != 0 and not errors:
            raise AssertionError("non-zero return without set_error")
        return launches, gemms, errors


__all__ = ["DiscError", "LaunchRecord", "MockCudaLibrary", "args_layouts"]
