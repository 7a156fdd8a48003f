"""passes/stitch.py: a row group's input that a non-member (a GEMM) also
reads on a path back into the group stays outside the stitch kernel, so
the kernel runs after that GEMM instead of the group losing its
reductions (a half LayerNorm's input rounded to half, read by the next
layer's projections)."""
from blade_disc_tf.compiler.ir.parser import parse_func
from blade_disc_tf.compiler.ir.verifier import verify
from blade_disc_tf.compiler.passes.stitch import stitch

_DOT = ('{"batch_lhs": [], "batch_rhs": [], "lhs_contract": [1], "lhs_free": [0], '
        '"rhs_contract": [0], "rhs_free": [1]}')


def _func(row_input: str) -> str:
    return f"""func @f(%arg0: f32[s0,s1], %arg1: f32[s1,s1]) {{
  %v0 = {row_input} : f32[s0,s1]
  %v1 = dot(%v0, %arg1) {_DOT} : f32[s0,s1]
  %v2 = add(%v0, %v1) : f32[s0,s1]
  %v3 = reduce(%v2) {{"dimensions": [1],"kind": "sum"}} : f32[s0,1]
  %v4 = broadcast_in_dim(%v3) {{"broadcast_dimensions": [0,1]}} : f32[s0,s1]
  %v5 = divide(%v2, %v4) : f32[s0,s1]
  return(%v5)
}}
"""


def test_row_input_a_dot_also_reads_stays_outside():
    func = verify(stitch(parse_func(_func("exponential(%arg0)"))))
    assert [op.name for op in func.ops] == ["exponential", "dot", "stitch"]
    assert [o.name for o in func.ops[2].region.ops] == [
        "add", "reduce", "broadcast_in_dim", "divide"]


def test_its_producers_in_the_row_space_stay_outside_too():
    text = _func("negate(%v9)").replace(
        "  %v0 =", "  %v8 = exponential(%arg0) : f32[s0,s1]\n"
                   "  %v9 = multiply(%v8, %arg0) : f32[s0,s1]\n  %v0 =")
    func = verify(stitch(parse_func(text)))
    assert [op.name for op in func.ops] == ["exponential", "multiply", "negate", "dot", "stitch"]
