"""GEMM epilogues (passes/gemm_epilogue.py, rt->gemm_epilogue): the pass on
IR snippets, and bias/activation/residual kernels run on C's pieces by the
ctypes harness (which calls the epilogue row piece by row piece, in reverse)
against stock TF over many shapes, incl. m = 1, odd n and empty dims."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler.ir import parse_func, verify
from blade_disc_tf.compiler.passes.gemm_epilogue import fuse_gemm_epilogues

from .test_matmul import _rand, _spec
from .test_matmul import _check as _check_exact

_DOT = ('{"batch_lhs": [],"batch_rhs": [],"lhs_contract": [1],"lhs_free": [0],'
        '"rhs_contract": [0],"rhs_free": [1]}')


def _func(body: str) -> str:
    return ("func @f(%arg0: f32[s0,s1], %arg1: f32[s1,s1], %arg2: f32[s1]) {\n"
            f"{body}\n}}")


def _names(f):
    return [(op.name, op.attrs.get("epilogue"), op.attrs.get("epilogue_of")) for op in f.ops]


_EXP = """\
  %v9 = fusion(%arg0) {"kernel": 0} : f32[s0,s1] {
    %v8 = exponential(%arg0) : f32[s0,s1]
    yield(%v8)
  }"""
_BIAS = """\
  %v1 = fusion(%arg2, %v0, %v9) {"kernel": 1} : f32[s0,s1] {
    %v2 = broadcast_in_dim(%arg2) {"broadcast_dimensions": [1]} : f32[s0,s1]
    %v3 = add(%v0, %v2) : f32[s0,s1]
    %v4 = add(%v3, %v9) : f32[s0,s1]
    yield(%v4)
  }"""


def test_pass_moves_the_reader_kernel_behind_its_dot():
    f = verify(parse_func(_func(f"""\
  %v0 = dot(%arg0, %arg1) {_DOT} : f32[s0,s1]
{_EXP}
{_BIAS}
  return(%v1)""")))
    # kernel 1 reads %v9 (computed after the dot): it cannot run inside it
    assert _names(verify(fuse_gemm_epilogues(f))) == [
        ("dot", None, None), ("fusion", None, None), ("fusion", None, None)]
    early = verify(parse_func(_func(f"""\
{_EXP}
  %v0 = dot(%arg0, %arg1) {_DOT} : f32[s0,s1]
  %v5 = fusion(%arg0) {{"kernel": 2}} : f32[s0,s1] {{
    %v6 = negate(%arg0) : f32[s0,s1]
    yield(%v6)
  }}
{_BIAS}
  return(%v1, %v5)""")))
    out = verify(fuse_gemm_epilogues(early))
    assert _names(out) == [("fusion", None, None), ("dot", 1, None), ("fusion", None, "v0"),
                           ("fusion", None, None)]
    assert out.ops[2].attrs["kernel"] == 1
    assert _names(early)[1] == ("dot", None, None)  # the input is not modified


def test_pass_skips_shifted_reads():
    f = verify(parse_func(_func(f"""\
  %v0 = dot(%arg0, %arg1) {_DOT} : f32[s0,s1]
  %v1 = fusion(%v0) {{"kernel": 0}} : f32[s0,s0,s1] {{
    %v2 = broadcast_in_dim(%v0) {{"broadcast_dimensions": [1,2]}} : f32[s0,s0,s1]
    %v3 = exponential(%v2) : f32[s0,s0,s1]
    yield(%v3)
  }}
  return(%v1)""")))
    assert _names(verify(fuse_gemm_epilogues(f)))[0] == ("dot", None, None)


def _check(exe, out_dt, fn, inputs, rtol=2e-5):
    _check_exact(exe, out_dt, fn, inputs, rtol)


# (m, k, n): m = 1, n not a multiple of 16 or 64, empty m, k and n
SHAPES = [(1, 8, 16), (5, 7, 70), (1, 1, 1), (33, 65, 17), (0, 4, 5), (3, 0, 5), (3, 4, 0),
          (2, 3, 64), (130, 20, 3)]


@pytest.mark.parametrize("act", ["relu", "gelu_tanh", "gelu_erf"])
def test_bias_activation_residual(compiler, act):
    f = {"relu": tf.nn.relu, "gelu_tanh": lambda x: tf.nn.gelu(x, approximate=True),
         "gelu_erf": lambda x: tf.nn.gelu(x, approximate=False)}[act]

    def fn(x, w, b, r):
        return f(tf.matmul(x, w) + b) + r
    exe, out_dt = compiler.executable(fn, [_spec(2), _spec(2), _spec(1), _spec(2)])
    for i, (m, k, n) in enumerate(SHAPES):
        _check(exe, out_dt, fn, [_rand((m, k), i), _rand((k, n), 10 + i), _rand((n,), 20 + i),
                                 _rand((m, n), 30 + i)])
        assert [c.get("epilogue") for c in exe.gemm_calls] in ([], [True]), exe.gemm_calls


def test_batched_transposed_and_f64(compiler):
    """Batched B^T products with a per-column scale, and float64."""
    def fn(x, w, s):
        return tf.tanh(tf.matmul(x, w, transpose_b=True) * s)
    exe, out_dt = compiler.executable(fn, [_spec(3), _spec(3), _spec(1)])
    for i, (b, m, k, n) in enumerate([(2, 3, 4, 5), (1, 1, 1, 1), (3, 17, 9, 33), (0, 2, 2, 2),
                                      (2, 0, 3, 4)]):
        _check(exe, out_dt, fn, [_rand((b, m, k), i), _rand((b, n, k), 5 + i), _rand((n,), i)])
    assert all(c.get("epilogue") for c in exe.gemm_calls), exe.gemm_calls

    def fn64(x, w, b):
        return tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b))
    exe, out_dt = compiler.executable(fn64, [_spec(2, tf.float64)] * 2 + [_spec(1, tf.float64)])
    for i, (m, k, n) in enumerate(SHAPES):
        _check(exe, out_dt, fn64, [_rand((m, k), i, np.float64), _rand((k, n), 7 + i, np.float64),
                                   _rand((n,), 9 + i, np.float64)], rtol=1e-10)


def test_dot_result_also_returned(compiler):
    """C is still written: a second reader and the output see the product."""
    def fn(x, w):
        h = tf.matmul(x, w)
        return tf.nn.relu(h), h, tf.reduce_sum(h, axis=1)
    exe, out_dt = compiler.executable(fn, [_spec(2), _spec(2)])
    for i, (m, k, n) in enumerate(SHAPES):
        _check(exe, out_dt, fn, [_rand((m, k), i), _rand((k, n), 3 + i)], rtol=1e-4)
