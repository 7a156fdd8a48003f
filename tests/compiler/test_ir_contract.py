"""ir/contract.py: the attributes passes leave for codegen are checked by
the verifier; each broken fact is named (IR snippets, text in)."""
import dataclasses

import pytest

from blade_disc_tf.compiler.ir import parse_func, verify
from blade_disc_tf.compiler.ir.core import Op
from blade_disc_tf.compiler.ir.verifier import VerifyError
from blade_disc_tf.compiler.passes.buffers import assign_buffers
from blade_disc_tf.compiler.passes.gemm_epilogue import fuse_gemm_epilogues
from blade_disc_tf.compiler.passes.merge_gemm import merge_gemms

from .test_merge_gemm import _DOT, _bias, _func

THREE_DOTS = _func(f"""\
  %v0 = dot(%arg0, %arg1) {_DOT} : f32[s1,s1]
{_bias("e0", "v0", 0)}
  %v1 = dot(%arg0, %arg2) {_DOT} : f32[s1,s1]
  %t0 = fusion(%v1) {{"kernel": 1}} : f32[s1,s1] {{
    %t1 = negate(%v1) : f32[s1,s1]
    yield(%t1)
  }}
  %v2 = dot(%arg0, %t0) {_DOT} : f32[s1,s1]
  return(%e0, %v2)""")


def _passed():
    return verify(assign_buffers(merge_gemms(fuse_gemm_epilogues(verify(parse_func(THREE_DOTS))))))


def _with(func, i: int, **attrs):
    """func with op i's attrs updated (None removes one)."""
    op = func.ops[i]
    new = {k: v for k, v in {**op.attrs, **attrs}.items() if v is not None}
    ops = list(func.ops)
    ops[i] = Op(op.name, op.operands, op.results, new, op.region)
    return dataclasses.replace(func, ops=ops)


def _index(func, name: str) -> int:
    return next(i for i, op in enumerate(func.ops) if op.results and op.result.name == name)


def test_passes_output_keeps_the_contract():
    f = _passed()
    assert f.ops[_index(f, "e0")].attrs["epilogue_of"] == "v0"
    assert f.ops[_index(f, "t0")].attrs["epilogue_of"] == "v1"
    assert f.ops[_index(f, "t0")].attrs["buffers"] == ["temp"]
    assert f.ops[_index(f, "v2")].attrs["frees"] == ["t0"]


@pytest.mark.parametrize("op_name, attrs, blamed", [
    ("t0", {"kernel": 0}, "kernel id 0 not a new int"),
    ("t0", {"kernel": "1"}, "not a new int"),
    ("e0", {"buffers": ["out:1"]}, "buffer 'out:1' of %e0 is not its output"),
    ("e0", {"buffers": ["temp", "temp"]}, "want one per result"),
    ("v2", {"frees": ["t0", "t0"]}, "frees t0, not a live temp"),
    ("v2", {"frees": ["e0"]}, "frees e0, not a live temp"),
    ("e0", {"epilogue_of": "v1"}, "epilogue_of 'v1' names no earlier dot"),
    ("e0", {"epilogue_of": None}, r"dot \['v0'\] has an epilogue kernel that never follows"),
    ("v1", {"gemm_group": None}, "has missing members"),
    ("v0", {"gemm_group": [0, 1, 2]}, "out of order"),
])
def test_broken_attribute_is_named(op_name, attrs, blamed):
    f = _passed()
    assert f.ops[_index(f, "v1")].attrs["gemm_group"] == [0, 1, 2], "the snippet merges v0, v1"
    with pytest.raises(VerifyError, match=blamed):
        verify(_with(f, _index(f, op_name), **attrs))
