"""Finding and loading the op library (DiscLaunch, the Grappler optimizer and
the runtime), and the typed ctypes view of its C API (disc_bridge.h).

The library is loaded twice on purpose: `tf.load_op_library` registers the op
and kernel with TensorFlow, and `ctypes.CDLL` on the same path returns the same
dlopen handle, through which Python sets options and the compile callback."""
from __future__ import annotations

import ctypes
import json
import os
import threading
from typing import Dict, Optional

from . import config

LIBRARY_NAME = "libblade_disc_tf.so"

COMPILE_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int32, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char), ctypes.c_int64,
    ctypes.POINTER(ctypes.c_char), ctypes.c_int64)


class _KernelPolicy(ctypes.Structure):
    """disc_bridge.h DiscKernelPolicy."""

    _fields_ = [(name, ctypes.c_int32) for name in (
        "skinny_gemm", "gemm_epilogue_fusion", "direct_conv", "conv_transpose_col2im",
        "packed_gemm", "prepack_weights", "multi_gemm", "bf16_gemm", "kernel_threads")]


class OpLibraryNotFound(ImportError):
    pass


def library_path() -> str:
    """The built op library: DISC_OP_LIBRARY, else beside this package."""
    explicit = config.op_library_override()
    if explicit:
        return os.path.abspath(explicit)
    package_dir = os.path.dirname(os.path.abspath(__file__))
    here = os.path.join(package_dir, LIBRARY_NAME)
    if os.path.exists(here):
        return here
    raise OpLibraryNotFound(_not_built_message(package_dir))


def _not_built_message(package_dir: str) -> str:
    """What to do about a missing library: build it in a source checkout
    (tf_disc/python/ beside tf_disc/build_ops.py); an installed package is
    broken, since its wheel's build puts the library in it."""
    build_script = os.path.join(os.path.dirname(package_dir), "build_ops.py")
    if os.path.isfile(build_script):
        return (f"{LIBRARY_NAME} is not built: run `python {build_script}` "
                "(or `bash scripts/setup.sh`) in the blade_disc_tf checkout")
    return (f"{LIBRARY_NAME} is missing from the installed package {package_dir}: "
            "this installation is broken; reinstall blade_disc_tf from a wheel "
            "(`pip install --force-reinstall <blade_disc_tf wheel>`, or "
            "`pip install .` in its source checkout, which builds the library)")


class OpLibrary:
    """The loaded library: TF's module object (ops) and the C API (ctypes)."""

    def __init__(self, path: str):
        import tensorflow as tf  # deferred: importing the package must stay cheap

        self.path = path
        self.ops = tf.load_op_library(path)
        lib = ctypes.CDLL(path)
        lib.DiscSetCompileCallback.argtypes = [COMPILE_CALLBACK]
        lib.DiscSetCompileCallback.restype = None
        lib.DiscSetSupportTable.argtypes = [ctypes.c_char_p]
        lib.DiscSetSupportTable.restype = ctypes.c_int32
        lib.DiscSetOptions.argtypes = [ctypes.c_char_p]
        lib.DiscSetOptions.restype = ctypes.c_int32
        lib.DiscGetStats.argtypes = [ctypes.c_char_p, ctypes.c_int64]
        lib.DiscGetStats.restype = ctypes.c_int64
        lib.DiscCompilesInFlight.argtypes = []
        lib.DiscCompilesInFlight.restype = ctypes.c_int64
        lib.DiscResetStats.argtypes = []
        lib.DiscResetStats.restype = None
        lib.DiscClearExecutableCache.argtypes = []
        lib.DiscClearExecutableCache.restype = None
        lib.DiscSetKernelPolicy.argtypes = [ctypes.POINTER(_KernelPolicy)]
        lib.DiscSetKernelPolicy.restype = ctypes.c_int32
        lib.DiscGetKernelPolicy.argtypes = [ctypes.POINTER(_KernelPolicy)]
        lib.DiscGetKernelPolicy.restype = None
        self._c = lib

    def set_compile_callback(self, callback) -> None:
        self._c.DiscSetCompileCallback(callback if callback is not None
                                       else COMPILE_CALLBACK())

    def set_support_table(self, table: dict) -> None:
        if self._c.DiscSetSupportTable(json.dumps(table).encode()) != 0:
            raise ValueError("the op library rejected the support table")

    def set_options(self, options: dict) -> None:
        if self._c.DiscSetOptions(json.dumps(options).encode()) != 0:
            raise ValueError(f"the op library rejected options {options}")

    def stats(self) -> dict:
        size = 1 << 16
        while True:
            buf = ctypes.create_string_buffer(size)
            needed = self._c.DiscGetStats(buf, size)
            if needed < size:
                return json.loads(buf.value.decode())
            size = needed + 1

    def compiles_in_flight(self) -> int:
        return int(self._c.DiscCompilesInFlight())

    def reset_stats(self) -> None:
        self._c.DiscResetStats()

    def clear_executable_cache(self) -> None:
        self._c.DiscClearExecutableCache()

    def set_kernel_policy(self, fields: Dict[str, int]) -> None:
        """Sets every field of the runtime kernels' policy (kernel_policy.py
        checks names and values first)."""
        if self._c.DiscSetKernelPolicy(ctypes.byref(_KernelPolicy(**fields))) != 0:
            raise ValueError(f"the op library rejected kernel policy {fields}")

    def kernel_policy(self) -> Dict[str, int]:
        policy = _KernelPolicy()
        self._c.DiscGetKernelPolicy(ctypes.byref(policy))
        return {name: int(getattr(policy, name)) for name, _ in _KernelPolicy._fields_}


_lock = threading.Lock()
_loaded: Optional[OpLibrary] = None


def load() -> OpLibrary:
    """Loads the op library once per process."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = OpLibrary(library_path())
        return _loaded
