"""Compiling a tf.function whose control flow calls library functions (as
the optimizer sends a cluster: frontend/functions.py) and checking the
executable against TF through the ctypes harness."""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from blade_disc_tf.compiler.frontend.functions import with_nested_functions
from blade_disc_tf.compiler.service import compile_request

from .harness import Executable


def function_request(fn, specs) -> tuple:
    """(concrete function, FunctionDef bytes with its nested functions, the
    request's "inputs")."""
    concrete = tf.function(fn).get_concrete_function(*specs)
    data = with_nested_functions(concrete.function_def, concrete.graph.as_graph_def().library)
    inputs = [{"dtype": t.dtype.as_datatype_enum, "rank": t.shape.rank}
              for t in concrete.inputs]
    return concrete, data, inputs


def compile_function(compiler, fn, specs) -> tuple[Executable, list]:
    """(the executable, its output numpy dtypes) for fn over specs."""
    concrete, data, inputs = function_request(fn, specs)
    req = {"function": concrete.function_def.signature.name, "key": "k", "inputs": inputs}
    reply = compile_request(req, data, compiler.options)
    assert reply["ok"], reply
    return Executable(reply["path"]), [t.dtype.as_numpy_dtype for t in concrete.outputs]


def check_against_tf(exe: Executable, out_dt: list, fn, xs: list, tol: float = 1e-5) -> None:
    got = exe(xs, out_dt)
    want = fn(*[tf.constant(x) for x in xs])
    want = want if isinstance(want, (tuple, list)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == tuple(w.shape)
        np.testing.assert_allclose(g, w.numpy(), rtol=tol, atol=tol)
