"""passes/split_epilogues.py on IR snippets: a kernel finishing several
GEMMs (Q/K/V bias adds) splits into one kernel per dot, each of which then
becomes its dot's epilogue; kernels whose parts share values, or that read
at most one dot, stay whole."""
from blade_disc_tf.compiler.ir import parse_func, print_func, verify
from blade_disc_tf.compiler.passes.gemm_epilogue import fuse_gemm_epilogues
from blade_disc_tf.compiler.passes.split_epilogues import split_epilogues

_DOT = ('{"batch_lhs": [],"batch_rhs": [],"lhs_contract": [1],"lhs_free": [0],'
        '"rhs_contract": [0],"rhs_free": [1]}')
_HEAD = "func @f(%arg0: f32[s0,s1], %arg1: f32[s1,s1], %arg2: f32[s1,s1], %arg3: f32[s1]) {"


def _func(body: str) -> str:
    return f"{_HEAD}\n{body}\n}}"


def _dots(body: str) -> str:
    return (f"  %v0 = dot(%arg0, %arg1) {_DOT} : f32[s0,s1]\n"
            f"  %v1 = dot(%arg0, %arg2) {_DOT} : f32[s0,s1]\n{body}")


_TWO_BIAS = _func(_dots("""\
  %v2, %v3 = fusion(%arg3, %v0, %v1) {"kernel": 4} : f32[s0,s1], f32[s0,s1] {
    %v4 = broadcast_in_dim(%arg3) {"broadcast_dimensions": [1]} : f32[s0,s1]
    %v5 = add(%v0, %v4) : f32[s0,s1]
    %v6 = broadcast_in_dim(%arg3) {"broadcast_dimensions": [1]} : f32[s0,s1]
    %v7 = add(%v1, %v6) : f32[s0,s1]
    %v8 = exponential(%v7) : f32[s0,s1]
    yield(%v5, %v8)
  }
  return(%v3, %v2)"""))


def _kernels(f):
    return [(op.attrs["kernel"], [v.name for v in op.operands], [r.name for r in op.results],
             [o.name for o in op.region.ops])
            for op in f.ops if op.name == "fusion"]


def test_two_bias_adds_split_one_kernel_per_dot():
    f = verify(parse_func(_TWO_BIAS))
    out = verify(split_epilogues(f))
    assert _kernels(out) == [
        (4, ["arg3", "v0"], ["v2"], ["broadcast_in_dim", "add"]),
        (5, ["arg3", "v1"], ["v3"], ["broadcast_in_dim", "add", "exponential"]),
    ]
    assert [r.name for r in out.rets] == ["v3", "v2"]
    # the text form round-trips
    assert print_func(verify(parse_func(print_func(out)))) == print_func(out)
    # each part becomes its own dot's epilogue
    ep = verify(fuse_gemm_epilogues(out))
    assert [(op.name, op.attrs.get("epilogue"), op.attrs.get("epilogue_of")) for op in ep.ops] == [
        ("dot", 4, None), ("fusion", None, "v0"), ("dot", 5, None), ("fusion", None, "v1")]
    # unsplit, only the second dot could take the kernel
    whole = verify(fuse_gemm_epilogues(f))
    assert [op.attrs.get("epilogue") for op in whole.ops if op.name == "dot"] == [None, 4]


def test_new_kernel_ids_follow_the_largest():
    src = _TWO_BIAS.replace("  return(%v3, %v2)", """\
  %v9 = fusion(%v3) {"kernel": 11} : f32[s0,s1] {
    %v10 = negate(%v3) : f32[s0,s1]
    yield(%v10)
  }
  return(%v9, %v2)""")
    out = verify(split_epilogues(verify(parse_func(src))))
    assert [k for k, *_ in _kernels(out)] == [4, 12, 11]


def test_parts_sharing_a_value_stay_together():
    f = verify(parse_func(_func(_dots("""\
  %v2, %v3 = fusion(%arg3, %v0, %v1) {"kernel": 0} : f32[s0,s1], f32[s0,s1] {
    %v4 = broadcast_in_dim(%arg3) {"broadcast_dimensions": [1]} : f32[s0,s1]
    %v5 = add(%v0, %v4) : f32[s0,s1]
    %v7 = add(%v1, %v4) : f32[s0,s1]
    yield(%v5, %v7)
  }
  return(%v2, %v3)"""))))
    assert _kernels(split_epilogues(f)) == _kernels(f)


def test_one_dot_and_a_dot_free_part_stay_together():
    f = verify(parse_func(_func(_dots("""\
  %v2, %v3 = fusion(%arg3, %v0, %arg0) {"kernel": 0} : f32[s0,s1], f32[s0,s1] {
    %v4 = broadcast_in_dim(%arg3) {"broadcast_dimensions": [1]} : f32[s0,s1]
    %v5 = add(%v0, %v4) : f32[s0,s1]
    %v7 = negate(%arg0) : f32[s0,s1]
    yield(%v5, %v7)
  }
  return(%v2, %v3, %v1)"""))))
    assert _kernels(split_epilogues(f)) == _kernels(f)


def test_dot_read_through_a_view_counts():
    f = verify(parse_func(_func(_dots("""\
  %v9 = reshape(%v1) : f32[s0,s1]
  %v2, %v3 = fusion(%v0, %v9) {"kernel": 0} : f32[s0,s1], f32[s0,s1] {
    %v5 = negate(%v0) : f32[s0,s1]
    %v7 = exponential(%v9) : f32[s0,s1]
    yield(%v5, %v7)
  }
  return(%v2, %v3)"""))))
    assert [ops for *_, ops in _kernels(verify(split_epilogues(f)))] == [
        ["negate"], ["exponential"]]
