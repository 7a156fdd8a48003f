"""The host's checks and allocations as prelude helper calls
(codegen/host_checks.py): TF's messages unchanged, and the library still
computes what TF computes; kernels whose row loop the shapes prove run
without the general strided loop (codegen/cpu/kernel.py rows_always)."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler.codegen.host_checks import alloc_temp, input_check
from blade_disc_tf.compiler.codegen.cpu.source import generate_source
from blade_disc_tf.compiler.frontend import lower_graph, parse_function_def
from blade_disc_tf.compiler.options import CompileOptions
from blade_disc_tf.compiler.passes.pipeline import run_pipeline
from blade_disc_tf.compiler.service import compile_request
from blade_disc_tf.compiler.target import get_target

CPU_PASSES = get_target("cpu").passes()

from .harness import DiscError, Executable

F = tf.float32


def _request(fn, specs):
    concrete = tf.function(fn).get_concrete_function(*specs)
    inputs = [{"dtype": t.dtype.as_datatype_enum, "rank": t.shape.rank, "value": None}
              for t in concrete.inputs]
    return {"function": "f", "key": "k", "inputs": inputs}, \
        concrete.function_def.SerializeToString()


def _source(fn, specs, static):
    """C++ of fn with the static dims Grappler would record (-1: unknown)."""
    req, fdef = _request(fn, specs)
    g = parse_function_def(fdef)
    g.static_dims = static
    return generate_source(run_pipeline(lower_graph(g, req["inputs"]), CPU_PASSES))


def bias_gelu(x, b):
    return tf.nn.gelu(x + b) * 2.0


def _exe(tmp_path, fn, specs):
    reply = compile_request(*_request(fn, specs), CompileOptions(cache_dir=str(tmp_path)))
    assert reply["ok"], reply
    return Executable(reply["path"])


def test_input_check_lines_name_the_input():
    assert input_check(3, 2, None, "") == [
        '  if (disc_check_input(rt, inputs, 3, 2, nullptr, "")) return 1;']
    lines = input_check(1, 2, ["-1", "16"], "input {0} vs {1}")
    assert "{-1, 16}" in lines[0] and 'inputs, 1, 2, w, "input {0} vs {1}"' in lines[1]
    assert "disc_temp(rt, sd, 0, &v3)" in "".join(alloc_temp("v3", "float", []))


def test_values_and_rank_check(tmp_path):
    """(The static-dim message: tests/e2e/test_static_dims.py, through TF.)"""
    exe = _exe(tmp_path, bias_gelu, [tf.TensorSpec([None, 16], F), tf.TensorSpec([16], F)])
    rng = np.random.default_rng(0)
    for rows in (3, 1, 0):
        x, b = rng.standard_normal((rows, 16)).astype(np.float32), \
            rng.standard_normal(16).astype(np.float32)
        (got,) = exe([x, b], [np.float32])
        np.testing.assert_allclose(got, bias_gelu(x, b).numpy(), rtol=2e-5, atol=2e-5)
    with pytest.raises(DiscError, match="input 1: expected rank 1"):
        exe([np.zeros((2, 16), np.float32), np.zeros((1, 16), np.float32)], [np.float32])


def _general_loops(src: str) -> int:
    """Kernels with the multi-index strided loop (kernel.py _render)."""
    return src.count("for (int d = 0; d < 2; ++d) o0 += idx[d] * c.st0[d];")


def test_proven_row_loop_drops_the_strided_loop(tmp_path):
    specs = [tf.TensorSpec([None, None], F), tf.TensorSpec([None], F)]
    static = _source(bias_gelu, specs, [[-1, 16], [16]])
    dynamic = _source(bias_gelu, specs, [None, None])
    assert _general_loops(static) == 0 and "c.st0[1] == 1" not in static
    assert _general_loops(dynamic) >= 1 and "c.st0[1] == 1" in dynamic


def broadcast_cols(x, c):        # [B, 1] across the last dim: needs the strided loop
    return tf.exp(x) + c


def test_column_broadcast_keeps_the_strided_loop(tmp_path):
    specs = [tf.TensorSpec([None, 16], F), tf.TensorSpec([None, 1], F)]
    assert _general_loops(_source(broadcast_cols, specs, [[-1, 16], [-1, 1]])) >= 1
    exe = _exe(tmp_path, broadcast_cols, specs)
    x = np.arange(48, dtype=np.float32).reshape(3, 16) / 48
    c = np.array([[1.0], [2.0], [3.0]], np.float32)
    (got,) = exe([x, c], [np.float32])
    np.testing.assert_allclose(got, broadcast_cols(x, c).numpy(), rtol=1e-6)


def lstm_gates(z, c):            # column blocks of [B, 4H]: views with row stride 4H
    i, f, g, o = tf.split(z, 4, axis=1)
    c2 = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
    return c2, tf.sigmoid(o) * tf.tanh(c2)


def test_column_block_views_take_the_row_loop():
    """With the width known, the gates are views of column blocks read as
    strided loads contiguous along rows: no multi-index read and no strided
    loop compiled (results: tests/e2e/test_split_reverse.py)."""
    specs = [tf.TensorSpec([None, None], F), tf.TensorSpec([None, None], F)]
    src = _source(lstm_gates, specs, [[-1, 64], [-1, 16]])
    gates = src[src.index("disc_logistic"):]
    assert "c.p0[int64_t(32) + o" in gates and "+ idx[1]" not in gates
    assert _general_loops(src) == 0
