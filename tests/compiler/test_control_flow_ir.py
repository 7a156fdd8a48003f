"""The `while` op in the IR (ir/control.py): text round trip with nested
functions, verifier checks, and the split into a Program
(passes/program.py) on small snippets."""
import pytest

from blade_disc_tf.compiler.ir import parse_func, print_func, verify
from blade_disc_tf.compiler.ir.verifier import VerifyError
from blade_disc_tf.compiler.passes.pipeline import run_pipeline, standard_passes
from blade_disc_tf.compiler.passes.program import (CARRIED, INVARIANT, Loop, Segment,
                                                   map_segments, split_program)

# counter < limit: the cond of every loop here
COND = """\
    func @cond(%arg0: i32[], %arg1: f32[s0,s1], %arg2: i32[]) {
      %v0 = compare(%arg0, %arg2) {"direction": "LT"} : i1[]
      return(%v0)
    }
"""

LOOP = """\
func @f(%arg0: f32[s0,s1], %arg1: i32[]) {
  %v0 = constant() {"value": [0]} : i32[]
  %v1 = exponential(%arg0) : f32[s0,s1]
  %v2, %v3, %v4 = while(%v0, %v1, %arg1) {"node": "w"} : i32[], f32[s2,s1], i32[] (
""" + COND + """\
    func @body(%arg0: i32[], %arg1: f32[s0,s1], %arg2: i32[]) {
      %v0 = constant() {"value": [1]} : i32[]
      %v1 = add(%arg0, %v0) : i32[]
      %v2 = tanh(%arg1) : f32[s0,s1]
      return(%v1, %v2, %arg2)
    }
  )
  %v5 = negate(%v3) : f32[s2,s1]
  return(%v5)
}
"""


def test_round_trip_with_nested_functions():
    f = verify(parse_func(LOOP))
    assert print_func(f) == LOOP
    (w,) = [op for op in f.ops if op.name == "while"]
    assert [g.name for g in w.funcs] == ["cond", "body"]


@pytest.mark.parametrize("old, new, why", [
    ('return(%v1, %v2, %arg2)', 'return(%v1, %v2)', "returns 2 values"),
    ('%v0 = compare(%arg0, %arg2) {"direction": "LT"} : i1[]\n      return(%v0)',
     'return(%arg0)', "one bool scalar"),
    ('%v2 = tanh(%arg1) : f32[s0,s1]\n      return(%v1, %v2, %arg2)',
     'return(%v1, %v1, %arg2)', "for loop variable"),
])
def test_verifier_rejects_malformed_loops(old, new, why):
    with pytest.raises(VerifyError, match=why):
        verify(parse_func(LOOP.replace(old, new)))


def test_loop_result_dims_are_defined_by_the_loop():
    f = verify(parse_func(LOOP))  # s2 is no argument's dim: the loop defines it
    assert f.ops[-1].result.shape == ("s2", "s1")


def test_split_into_segments_and_loop():
    prog = split_program(verify(parse_func(LOOP)))
    kinds = [type(s).__name__ for s in prog.steps]
    assert kinds == ["Segment", "Loop", "Segment"]
    pre, loop, post = prog.steps
    assert isinstance(pre, Segment) and isinstance(loop, Loop) and isinstance(post, Segment)
    # the constant loop operand is a buffer: the segment returns it
    assert [v.name for v in pre.outputs] == ["v0", "v1"]
    # the body returns %arg2 unchanged: an invariant it does not return
    assert loop.modes == [CARRIED, CARRIED, INVARIANT]
    assert len(loop.body.rets) == 2
    # every later segment sees the program's arguments and the loop's results
    assert [v.name for v in post.inputs] == ["arg0", "arg1", "v2", "v3", "v4"]


def test_pipeline_runs_on_every_segment():
    from blade_disc_tf.compiler.target.cpu import cheap_to_recompute
    prog = map_segments(split_program(verify(parse_func(LOOP))),
                        lambda f: run_pipeline(f, standard_passes(cheap_to_recompute),
                                               speculated=False))
    for seg in prog.segments():
        verify(seg.func)
        assert all(op.name in ("fusion", "constant", "dims_tensor", "stitch")
                   for op in seg.func.ops), print_func(seg.func)


LIST_LOOP = """\
func @f(%arg0: f32[s0,s1], %arg1: i32[]) {
  %v0 = constant() {"value": [0]} : i32[]
  %v1, %v2, %v3 = while(%v0, %arg0, %arg1) {"node": "w"} : i32[], f32[s0,s1], i32[] (
""" + COND + """\
    func @body(%arg0: i32[], %arg1: f32[s0,s1], %arg2: i32[]) {
      %v0 = constant() {"value": [1]} : i32[]
      %v1 = add(%arg0, %v0) : i32[]
      %v2 = constant() {"value": [2.0]} : f32[]
      %v3 = broadcast_in_dim(%v2) {"broadcast_dimensions": []} : f32[s1]
      %v4 = list_set(%arg1, %arg0, %v3) : f32[s0,s1]
      return(%v1, %v4, %arg2)
    }
  )
  return(%v2)
}
"""


def test_list_set_of_a_loop_variable_is_in_place():
    from blade_disc_tf.compiler.passes.program import IN_PLACE
    (_, loop) = split_program(verify(parse_func(LIST_LOOP))).steps
    assert loop.modes == [CARRIED, IN_PLACE, INVARIANT]
    (seg,) = loop.body.steps
    # the body returns the counter, then the row's index and item
    assert [v.name for v in seg.outputs] == ["v1", "v5", "v3"]
    assert seg.func.ops[-1].name == "copy" and seg.func.ops[-1].operands[0].name == "arg0"
    assert not any(op.name == "list_set" for op in seg.func.ops)


def test_list_set_read_elsewhere_stays_a_value():
    text = LIST_LOOP.replace("return(%v1, %v4, %arg2)",
                             "%v5 = negate(%arg1) : f32[s0,s1]\n      return(%v1, %v4, %arg2)")
    (_, loop) = split_program(verify(parse_func(text))).steps
    assert loop.modes == [CARRIED, CARRIED, INVARIANT]


def test_expand_list_sets_makes_a_select():
    from blade_disc_tf.compiler.passes.list_sets import expand_list_sets
    body = verify(parse_func(LIST_LOOP)).ops[1].funcs[1]
    out = verify(expand_list_sets(body))
    assert [op.name for op in out.ops if op.name in ("list_set", "select")] == ["select"]


RNN_LOOP = """\
func @f(%arg0: f32[s0,s1,4], %arg1: f32[4,6], %arg2: f32[s1,6]) {
  %v0 = constant() {"value": [0]} : i32[]
  %v1, %v2, %v3, %v4 = while(%v0, %arg0, %arg1, %arg2) {"node": "w"} : i32[], f32[s0,s1,4], f32[4,6], f32[s1,6] (
    func @cond(%arg0: i32[], %arg1: f32[s0,s1,4], %arg2: f32[4,6], %arg3: f32[s1,6]) {
      %v0 = constant() {"value": [3]} : i32[]
      %v1 = compare(%arg0, %v0) {"direction": "LT"} : i1[]
      return(%v1)
    }
    func @body(%arg0: i32[], %arg1: f32[s0,s1,4], %arg2: f32[4,6], %arg3: f32[s1,6]) {
      %v0 = gather(%arg1, %arg0) {"axis": 0} : f32[s1,4]
      %v1 = dot(%v0, %arg2) {"batch_lhs": [], "batch_rhs": [], "lhs_contract": [1], "lhs_free": [0], "rhs_contract": [0], "rhs_free": [1]} : f32[s1,6]
      %v2 = add(%v1, %arg3) : f32[s1,6]
      %v3 = constant() {"value": [1]} : i32[]
      %v4 = add(%arg0, %v3) : i32[]
      return(%v4, %arg1, %arg2, %v2)
    }
  )
  return(%v4)
}
"""


def test_input_projection_is_hoisted_out_of_the_loop():
    from blade_disc_tf.compiler.passes.hoist_loop_gemm import hoist_loop_gemms
    f = verify(parse_func(RNN_LOOP))
    out = verify(hoist_loop_gemms(f))
    pre, loop = out.ops[-2], out.ops[-1]
    assert pre.name == "dot" and pre.attrs["lhs_free"] == [0, 1] and pre.result.shape == \
        ("s0", "s1", "6")
    assert loop.operands[-1] is pre.result and len(loop.results) == 5
    body = loop.funcs[1]
    assert [op.name for op in body.ops if op.name in ("dot", "gather")] == ["gather"]
    assert body.rets[-1] is body.args[-1]  # the projection is an invariant
    # a weight the loop changes stays in the body
    changed = RNN_LOOP.replace("%v2 = add(%v1, %arg3) : f32[s1,6]",
                               "%v2 = add(%v1, %arg3) : f32[s1,6]\n"
                               "      %v9 = negate(%arg2) : f32[4,6]").replace(
        "return(%v4, %arg1, %arg2, %v2)", "return(%v4, %arg1, %v9, %v2)")
    g = verify(parse_func(changed))
    assert hoist_loop_gemms(g) is g
