"""passes/rematerialize.py on IR snippets: a broadcast-only value shared by
two row kernels is recomputed in each instead of written out by the first."""
from blade_disc_tf.compiler.ir import parse_func, print_func, verify
from blade_disc_tf.compiler.passes.pipeline import run_pipeline
from blade_disc_tf.compiler.passes.rematerialize import rematerialize_broadcasts
from blade_disc_tf.compiler.target import get_target
from blade_disc_tf.compiler.target.cpu import cheap_to_recompute

CPU_PASSES = get_target("cpu").passes()

# Two softmaxes (two attention layers) over the same masked bias and the
# same broadcast +inf: what CSE leaves of a 2-layer encoder.
TWO_LAYERS = """func @f(%arg0: f32[s0,4,s1,s1], %arg1: f32[s0,4,s1,s1], %arg2: f32[s0,1,1,s1]) {
  %v0 = constant() {"value": [-10000.0]} : f32[]
  %v1 = constant() {"value": [Infinity]} : f32[]
  %v2 = broadcast_in_dim(%v0) {"broadcast_dimensions": []} : f32[s0,4,s1,s1]
  %v3 = broadcast_in_dim(%arg2) {"broadcast_dimensions": [0,1,2,3]} : f32[s0,4,s1,s1]
  %v4 = multiply(%v2, %v3) : f32[s0,4,s1,s1]
  %v5 = broadcast_in_dim(%v1) {"broadcast_dimensions": []} : f32[s0,4,s1,s1]
  %v6 = add(%arg0, %v4) : f32[s0,4,s1,s1]
  %v7 = reduce(%v6) {"dimensions": [3],"kind": "max_ignore_nan"} : f32[s0,4,s1,1]
  %v8 = broadcast_in_dim(%v7) {"broadcast_dimensions": [0,1,2,3]} : f32[s0,4,s1,s1]
  %v9 = subtract(%v6, %v8) : f32[s0,4,s1,s1]
  %v10 = exponential(%v9) : f32[s0,4,s1,s1]
  %v11 = is_nan(%v9) : i1[s0,4,s1,s1]
  %v12 = select(%v11, %v5, %v10) : f32[s0,4,s1,s1]
  %v13 = dot(%v12, %arg1) {"batch_lhs": [0,1], "batch_rhs": [0,1], "lhs_contract": [3], "lhs_free": [2], "rhs_contract": [2], "rhs_free": [3]} : f32[s0,4,s1,s1]
  %v14 = add(%v13, %v4) : f32[s0,4,s1,s1]
  %v15 = reduce(%v14) {"dimensions": [3],"kind": "max_ignore_nan"} : f32[s0,4,s1,1]
  %v16 = broadcast_in_dim(%v15) {"broadcast_dimensions": [0,1,2,3]} : f32[s0,4,s1,s1]
  %v17 = subtract(%v14, %v16) : f32[s0,4,s1,s1]
  %v18 = exponential(%v17) : f32[s0,4,s1,s1]
  %v19 = is_nan(%v17) : i1[s0,4,s1,s1]
  %v20 = select(%v19, %v5, %v18) : f32[s0,4,s1,s1]
  return(%v20)
}
"""


def _producers(func, name):
    return [op for op in func.ops if op.name == name]


def test_second_user_gets_its_own_chain():
    func = verify(rematerialize_broadcasts(verify(parse_func(TWO_LAYERS)), cheap_to_recompute))
    # mask product (2 broadcasts + multiply) and the +inf broadcast, twice each
    assert len(_producers(func, "multiply")) == 2
    assert len(_producers(func, "broadcast_in_dim")) == 2 * 3 + 2   # + two identity-shaped
    v14 = next(op for op in func.ops if op.results[0].name == "v14")
    assert v14.operands[1].name != "v4"
    mult = next(op for op in func.ops if op.results[0] is v14.operands[1])
    assert mult.name == "multiply"
    assert [op.name for op in func.ops].index("multiply", 5) < func.ops.index(v14)
    again = parse_func(print_func(func))   # still prints and parses
    assert print_func(again) == print_func(func)


def test_nothing_shared_is_unchanged():
    text = """func @f(%arg0: f32[s0,s1], %arg1: f32[s1]) {
  %v0 = broadcast_in_dim(%arg1) {"broadcast_dimensions": [1]} : f32[s0,s1]
  %v1 = add(%arg0, %v0) : f32[s0,s1]
  %v2 = multiply(%v1, %v1) : f32[s0,s1]
  return(%v2)
}
"""
    func = parse_func(text)
    assert print_func(rematerialize_broadcasts(func, cheap_to_recompute)) == print_func(func)


def test_full_size_values_and_expensive_ops_stay_shared():
    # %v1 reads a full-size argument, %v3 an exp: recomputing either would
    # read as much memory or cost more than loading the shared value
    text = """func @f(%arg0: f32[s0,s1], %arg1: f32[s1]) {
  %v0 = broadcast_in_dim(%arg1) {"broadcast_dimensions": [1]} : f32[s0,s1]
  %v1 = add(%arg0, %v0) : f32[s0,s1]
  %v3 = exponential(%v0) : f32[s0,s1]
  %v4 = multiply(%v1, %v3) : f32[s0,s1]
  %v5 = subtract(%v1, %v3) : f32[s0,s1]
  return(%v4, %v5)
}
"""
    func = verify(rematerialize_broadcasts(parse_func(text), cheap_to_recompute))
    names = [op.name for op in func.ops]
    assert names.count("exponential") == 1 and names.count("add") == 1
    assert names.count("broadcast_in_dim") == 2   # %v0 for the exp, its copy for the add


def test_softmax_stitches_write_only_their_result():
    """Through the whole pipeline: each softmax row kernel has one output
    (before: the first also wrote the mask product and the +inf broadcast
    at [B, H, S, S] for the second to read)."""
    func = run_pipeline(parse_func(TWO_LAYERS), CPU_PASSES)
    stitches = _producers(func, "stitch")
    assert len(stitches) == 2, [op.name for op in func.ops]
    assert [len(op.results) for op in stitches] == [1, 1]
