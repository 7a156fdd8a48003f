"""Session-wide compile cache and helpers to compile tf.functions and run
them through the ctypes harness."""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

from .harness import Executable  # noqa: E402


class Compiler:
    """Compiles concrete tf.functions once per (function, signature)."""

    def __init__(self, cache_dir: str, target: str = "cpu") -> None:
        from blade_disc_tf.compiler.options import CompileOptions
        self.options = CompileOptions(cache_dir=cache_dir, target=target)
        self.memo: dict = {}

    def request(self, concrete, values=None) -> tuple[dict, bytes]:
        fdef = concrete.function_def
        inputs = []
        for i, t in enumerate(concrete.inputs):
            inputs.append({"dtype": t.dtype.as_datatype_enum, "rank": t.shape.rank,
                           "value": (values or {}).get(i)})
        return ({"function": fdef.signature.name, "key": fdef.signature.name,
                 "inputs": inputs}, fdef.SerializeToString())

    def compile(self, concrete, options=None) -> dict:
        from blade_disc_tf.compiler.service import compile_request
        req, data = self.request(concrete)
        return compile_request(req, data, options or self.options)

    def executable(self, fn, specs) -> tuple[Executable, list]:
        import tensorflow as tf
        key = (fn, tuple(str(s) for s in specs))
        if key not in self.memo:
            concrete = tf.function(fn).get_concrete_function(*specs)
            reply = self.compile(concrete)
            assert reply["ok"], reply
            outs = [t.dtype.as_numpy_dtype for t in concrete.outputs]
            self.memo[key] = (Executable(reply["path"]), outs)
        return self.memo[key]


@pytest.fixture(scope="session")
def compiler(tmp_path_factory) -> Compiler:
    return Compiler(str(tmp_path_factory.mktemp("disc_cache")))


@pytest.fixture(scope="session")
def reference_compiler(tmp_path_factory) -> Compiler:
    """Compiles for the scalar reference target (target/cpu.py)."""
    return Compiler(str(tmp_path_factory.mktemp("disc_cache_reference")), "cpu_reference")
