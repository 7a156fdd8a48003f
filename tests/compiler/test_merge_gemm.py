"""Merged GEMMs (passes/merge_gemm.py, rt->gemm_multi): the pass on IR
snippets (merged; not merged: dependent dots, different or transposed A,
batched dots, a reader in between), and QKV-like functions on the ctypes
harness (its gemm_multi runs the parts one by one, last first) against stock
TF over shapes incl. one row and empty dims."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler.ir import parse_func, verify
from blade_disc_tf.compiler.passes.gemm_epilogue import fuse_gemm_epilogues
from blade_disc_tf.compiler.passes.merge_gemm import merge_gemms

from .test_matmul import _check, _rand, _spec

_DOT = ('{"batch_lhs": [],"batch_rhs": [],"lhs_contract": [1],"lhs_free": [0],'
        '"rhs_contract": [0],"rhs_free": [1]}')
_DOT_TA = ('{"batch_lhs": [],"batch_rhs": [],"lhs_contract": [0],"lhs_free": [1],'
           '"rhs_contract": [0],"rhs_free": [1]}')
_DOT_TB = ('{"batch_lhs": [],"batch_rhs": [],"lhs_contract": [1],"lhs_free": [0],'
           '"rhs_contract": [1],"rhs_free": [0]}')


def _func(body: str, dt: str = "f32") -> str:
    return (f"func @f(%arg0: {dt}[s1,s1], %arg1: {dt}[s1,s1], %arg2: {dt}[s1,s1], "
            f"%arg3: {dt}[s1]) {{\n{body}\n}}")


def _groups(f):
    return [(op.name, op.result.name if op.results else None, op.attrs.get("gemm_group"))
            for op in f.ops]


def _run(text: str):
    f = verify(parse_func(text))
    return verify(merge_gemms(fuse_gemm_epilogues(f)))


def _bias(out: str, dot: str, kernel: int) -> str:
    return (f"  %{out} = fusion(%arg3, %{dot}) {{\"kernel\": {kernel}}} : f32[s1,s1] {{\n"
            f"    %{out}b = broadcast_in_dim(%arg3) {{\"broadcast_dimensions\": [1]}} "
            ": f32[s1,s1]\n"
            f"    %{out}a = add(%{dot}, %{out}b) : f32[s1,s1]\n"
            f"    yield(%{out}a)\n  }}")


def test_three_dots_on_one_lhs_merge_with_their_epilogues():
    f = _run(_func(f"""\
  %v0 = dot(%arg0, %arg1) {_DOT} : f32[s1,s1]
{_bias("e0", "v0", 0)}
  %v1 = dot(%arg0, %arg2) {_DOT} : f32[s1,s1]
{_bias("e1", "v1", 1)}
  %v2 = dot(%arg0, %arg1) {_DOT} : f32[s1,s1]
  return(%e0, %e1, %v2)"""))
    assert _groups(f) == [("dot", "v0", [0, 0, 3]), ("fusion", "e0", None),
                          ("dot", "v1", [0, 1, 3]), ("fusion", "e1", None),
                          ("dot", "v2", [0, 2, 3])]
    assert f.ops[1].attrs["epilogue_of"] == "v0"


def test_bundles_gather_at_the_last_member():
    """An unrelated kernel between the dots stays before the group."""
    f = _run(_func(f"""\
  %v0 = dot(%arg0, %arg1) {_DOT} : f32[s1,s1]
  %n0 = fusion(%arg2) {{"kernel": 5}} : f32[s1,s1] {{
    %n1 = negate(%arg2) : f32[s1,s1]
    yield(%n1)
  }}
  %v1 = dot(%arg0, %n0) {_DOT} : f32[s1,s1]
  return(%v0, %v1)"""))
    assert _groups(f) == [("fusion", "n0", None), ("dot", "v0", [0, 0, 2]),
                          ("dot", "v1", [0, 1, 2])]


def test_dependent_dots_do_not_merge():
    f = _run(_func(f"""\
  %v0 = dot(%arg0, %arg1) {_DOT} : f32[s1,s1]
  %v1 = dot(%arg0, %v0) {_DOT} : f32[s1,s1]
  return(%v1)"""))
    assert [g for _, _, g in _groups(f)] == [None, None]


def test_reader_in_between_blocks_the_move():
    """%n0 reads %v0 (not as its epilogue: %m0 comes after the dot) before %v1:
    moving %v0 down past it would break SSA."""
    f = _run(_func(f"""\
  %v0 = dot(%arg0, %arg1) {_DOT} : f32[s1,s1]
  %m0 = fusion(%arg2) {{"kernel": 4}} : f32[s1,s1] {{
    %m1 = negate(%arg2) : f32[s1,s1]
    yield(%m1)
  }}
  %n0 = fusion(%v0, %m0) {{"kernel": 5}} : f32[s1,s1] {{
    %n1 = multiply(%v0, %m0) : f32[s1,s1]
    yield(%n1)
  }}
  %v1 = dot(%arg0, %arg2) {_DOT} : f32[s1,s1]
  return(%n0, %v1)"""))
    assert [g for _, _, g in _groups(f)] == [None, None, None, None]


def test_different_or_transposed_a_and_b_layouts_do_not_merge():
    f = _run(_func(f"""\
  %v0 = dot(%arg0, %arg1) {_DOT} : f32[s1,s1]
  %v1 = dot(%arg1, %arg2) {_DOT} : f32[s1,s1]
  %v2 = dot(%arg0, %arg2) {_DOT_TA} : f32[s1,s1]
  %v3 = dot(%arg0, %arg2) {_DOT_TB} : f32[s1,s1]
  %v4 = dot(%arg0, %arg2) {_DOT} : f32[s1,s1]
  return(%v0, %v1, %v2, %v3, %v4)"""))
    assert [(n, g) for _, n, g in _groups(f)] == [
        ("v1", None), ("v2", None), ("v3", None), ("v0", [0, 0, 2]), ("v4", [0, 1, 2])]


def test_batched_dots_do_not_merge_and_f64_does():
    batched = ('{"batch_lhs": [0],"batch_rhs": [0],"lhs_contract": [2],"lhs_free": [1],'
               '"rhs_contract": [1],"rhs_free": [2]}')
    f = verify(merge_gemms(verify(parse_func(f"""\
func @f(%arg0: f32[s0,s1,s1], %arg1: f32[s0,s1,s1]) {{
  %v0 = dot(%arg0, %arg1) {batched} : f32[s0,s1,s1]
  %v1 = dot(%arg0, %arg1) {batched} : f32[s0,s1,s1]
  return(%v0, %v1)
}}"""))))
    assert [g for _, _, g in _groups(f)] == [None, None]
    f = _run(_func(f"""\
  %v0 = dot(%arg0, %arg1) {_DOT} : f64[s1,s1]
  %v1 = dot(%arg0, %arg2) {_DOT} : f64[s1,s1]
  return(%v0, %v1)""", "f64"))
    assert [g for _, _, g in _groups(f)] == [[0, 0, 2], [0, 1, 2]]


def _qkv(x, wq, wk, wv, bq, bk, bv, r):
    q = (tf.matmul(x, wq) + bq) * 0.125
    k = tf.matmul(x, wk) + bk
    v = tf.nn.relu(tf.matmul(x, wv) + bv) + r
    return q, k, v


# (m, k, n): one row, odd sizes, empty m, k, n
SHAPES = [(1, 8, 16), (5, 7, 70), (1, 1, 1), (33, 65, 17), (0, 4, 5), (3, 0, 5), (3, 4, 0),
          (64, 48, 96)]


def test_qkv_matches_tf_in_one_multi_call(compiler):
    exe, out_dt = compiler.executable(_qkv, [_spec(2)] * 4 + [_spec(1)] * 3 + [_spec(2)])
    for i, (m, k, n) in enumerate(SHAPES):
        ins = [_rand((m, k), i)] + [_rand((k, n), 10 * j + i) for j in (1, 2, 3)]
        ins += [_rand((n,), 40 + j + i) for j in range(3)] + [_rand((m, n), 50 + i)]
        _check(exe, out_dt, _qkv, ins, rtol=2e-5)
        if m and n:
            assert [c.get("multi") for c in exe.gemm_calls] == [3, 3, 3], exe.gemm_calls
            assert all(c.get("epilogue") for c in exe.gemm_calls), exe.gemm_calls


@pytest.mark.parametrize("dt", [tf.float32, tf.float64])
def test_shared_lhs_without_epilogue_and_transposed_b(compiler, dt):
    """Products returned as they are (NULL epilogues), B stored n x k."""
    def fn(x, w1, w2):
        return (tf.matmul(x, w1, transpose_b=True), tf.matmul(x, w2, transpose_b=True),
                tf.matmul(x, w1))
    exe, out_dt = compiler.executable(fn, [_spec(2, dt)] * 3)
    npdt = dt.as_numpy_dtype
    for i, m in enumerate([1, 0, 7, 40]):
        ins = [_rand((m, 6), i, npdt), _rand((6, 6), 5 + i, npdt), _rand((6, 6), 9 + i, npdt)]
        _check(exe, out_dt, fn, ins, rtol=1e-5)
        if m:
            assert sorted(c.get("multi") or 0 for c in exe.gemm_calls) == [0, 2, 2]
