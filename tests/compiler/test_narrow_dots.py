"""passes/narrow_dots.py on IR snippets: a float32 dot between converts
from and back to one 16-bit type becomes a dot of that type, and only then;
the CUDA target runs it, the CPU targets do not."""
import pytest

from blade_disc_tf.compiler.ir import parse_func, verify
from blade_disc_tf.compiler.passes.dce import dce
from blade_disc_tf.compiler.passes.narrow_dots import narrow_dots
from blade_disc_tf.compiler.target import CpuTarget, CudaTarget

_DOT = ('{"batch_lhs": [],"batch_rhs": [],"lhs_contract": [1],"lhs_free": [0],'
        '"rhs_contract": [0],"rhs_free": [1]}')


def _func(lhs: str, rhs: str, body: str, ret: str = "%v3") -> str:
    return (f"func @f(%arg0: {lhs}[s0,s1], %arg1: {rhs}[s1,s2]) {{\n"
            f"  %v0 = convert(%arg0) : f32[s0,s1]\n"
            f"  %v1 = convert(%arg1) : f32[s1,s2]\n"
            f"  %v2 = dot(%v0, %v1) {_DOT} : f32[s0,s2]\n"
            f"{body}\n  return({ret})\n}}")


def _ops(f) -> list[tuple[str, list[str], str]]:
    return [(op.name, [v.name for v in op.operands], str(op.result.type)) for op in f.ops]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_half_dot_between_converts_reads_and_writes_its_type(dtype):
    f = verify(parse_func(_func(dtype, dtype, f"  %v3 = convert(%v2) : {dtype}[s0,s2]")))
    out = verify(dce(narrow_dots(f)))
    assert _ops(out) == [("dot", ["arg0", "arg1"], f"{dtype}[s0,s2]")]
    assert out.ops[0].attrs == f.ops[2].attrs and out.rets[0] is f.rets[0]


def test_operand_converts_read_elsewhere_stay():
    f = verify(parse_func(_func("f16", "f16", "  %v3 = convert(%v2) : f16[s0,s2]\n"
                                "  %v4 = exponential(%v0) : f32[s0,s1]", ret="%v3, %v4")))
    out = verify(dce(narrow_dots(f)))
    assert [op.name for op in out.ops] == ["convert", "dot", "exponential"]
    assert out.ops[1].result.dtype.name == "f16"


@pytest.mark.parametrize("lhs,rhs,body,ret", [
    # the float32 product itself is read (returned, or by another op)
    ("f16", "f16", "  %v3 = convert(%v2) : f16[s0,s2]", "%v3, %v2"),
    ("f16", "f16", "  %v3 = convert(%v2) : f16[s0,s2]\n  %v4 = negate(%v2) : f32[s0,s2]",
     "%v3, %v4"),
    # rounded to another type than the operands'
    ("f16", "f16", "  %v3 = convert(%v2) : bf16[s0,s2]", "%v3"),
    ("f16", "bf16", "  %v3 = convert(%v2) : f16[s0,s2]", "%v3"),
    ("f64", "f64", "  %v3 = convert(%v2) : f64[s0,s2]", "%v3"),
])
def test_other_dots_stay_float32(lhs, rhs, body, ret):
    f = verify(parse_func(_func(lhs, rhs, body, ret)))
    assert narrow_dots(f) is f


def test_only_the_cuda_target_narrows_dots():
    assert "narrow_dots" in [n for n, _ in CudaTarget().passes()]
    assert "narrow_dots" not in [n for n, _ in CpuTarget().passes()]
