"""Conditionals compiled whole (ir/control.py `if`/`case`, ops/conditional.py,
passes/program.py Branch, codegen/cpu/program.py, runtime/cpu/prelude/
disc_branch.h): IR text round trip and verifier errors on small snippets,
and tf.cond / tf.switch_case (in a loop body or cond, around a loop, nested)
against TF over many shapes including 0- and 1-sized dims through the
ctypes harness, one compile per rank signature each."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler.errors import Unsupported
from blade_disc_tf.compiler.frontend import lower_graph, parse_function_def
from blade_disc_tf.compiler.frontend.functions import nested_functions
from blade_disc_tf.compiler.ir import parse_func, print_func, verify
from blade_disc_tf.compiler.ir.verifier import VerifyError
from blade_disc_tf.compiler.passes.program import Branch, Segment, split_program

from .nested_functions import check_against_tf as _check
from .nested_functions import compile_function as _compile
from .nested_functions import function_request

F = tf.float32

BRANCHES = """\
    func @then(%arg0: f32[s0,s1]) {
      %v0 = tanh(%arg0) : f32[s0,s1]
      return(%v0)
    }
    func @else(%arg0: f32[s0,s1]) {
      %v0 = negate(%arg0) : f32[s0,s1]
      return(%v0)
    }
"""

IF = """\
func @f(%arg0: f32[s0,s1], %arg1: i1[]) {
  %v0 = exponential(%arg0) : f32[s0,s1]
  %v1 = if(%arg1, %v0) {"node": "c"} : f32[s0,s1] (
""" + BRANCHES + """\
  )
  %v2 = negate(%v1) : f32[s0,s1]
  return(%v2)
}
"""

CASE = IF.replace("%arg1: i1[]", "%arg1: i32[]").replace("if(%arg1", "case(%arg1")


def test_round_trip_if_and_case():
    for text, name in ((IF, "if"), (CASE, "case")):
        f = verify(parse_func(text))
        assert print_func(f) == text
        (op,) = [op for op in f.ops if op.name == name]
        assert [g.name for g in op.funcs] == ["then", "else"]


@pytest.mark.parametrize("text, old, new, why", [
    (IF, "%arg1: i1[]", "%arg1: i32[]", "no bool scalar"),
    (IF, "%arg1: i1[]", "%arg1: i1[s2]", "no bool scalar"),
    (CASE, "%arg1: i32[]", "%arg1: i64[]", "no int32 scalar"),
    (IF, "%v0 = negate(%arg0) : f32[s0,s1]\n      return(%v0)", "return(%arg0, %arg0)",
     "returns 2 values for 1 results"),
    (IF, "func @else(%arg0: f32[s0,s1])", "func @else(%arg0: f32[s0])", "@else argument"),
    (IF, "%v0 = negate(%arg0) : f32[s0,s1]\n      return(%v0)",
     "%v0 = reduce(%arg0) {\"dimensions\": [1], \"kind\": \"sum\"} : f32[s0]\n"
     "      return(%v0)", "@else returns"),
    (IF, BRANCHES, BRANCHES.split("    func @else")[0], "then and an else"),
])
def test_verifier_rejects_malformed_conditionals(text, old, new, why):
    assert old in text
    with pytest.raises(VerifyError, match=why):
        verify(parse_func(text.replace(old, new)))


def test_split_into_segments_and_branch():
    prog = split_program(verify(parse_func(IF)))
    pre, branch, post = prog.steps
    assert isinstance(pre, Segment) and isinstance(branch, Branch) and isinstance(post, Segment)
    assert [len(p.steps) for p in branch.branches] == [1, 1]
    assert [v.name for v in post.inputs] == ["arg0", "arg1", "v1"]
    assert len(prog.segments()) == 4


def _cond(x, y, p):
    """Branches whose result shapes differ: the result takes the taken one's."""
    return tf.cond(p, lambda: tf.tanh(x) * 2.0 + y, lambda: tf.concat([x, y * 0.5], 0))


SHAPES = [(2, 3), (0, 3), (1, 1), (3, 0), (1, 7), (5, 1), (4, 4), (0, 0), (7, 2), (1, 0),
          (2, 9), (6, 5), (3, 3), (8, 1), (1, 2), (9, 4), (2, 2), (0, 1), (4, 6), (10, 3)]


def test_if_against_tf(compiler):
    exe, dt = _compile(compiler, _cond, [tf.TensorSpec([None, None], F)] * 2 +
                       [tf.TensorSpec([], tf.bool)])
    rng = np.random.default_rng(0)
    for k, shape in enumerate(SHAPES):
        x, y = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
        _check(exe, dt, _cond, [x, y, np.bool_(k % 2 == 0)])
        _check(exe, dt, _cond, [x, y, np.bool_(k % 2 == 1)])


def _switch(x, i):
    return tf.switch_case(i, [lambda: x + 1.0, lambda: tf.reduce_sum(x, 0, keepdims=True),
                              lambda: tf.tile(x, [2, 1])])


def test_case_against_tf_out_of_range_runs_the_last_branch(compiler):
    exe, dt = _compile(compiler, _switch, [tf.TensorSpec([None, None], F),
                                           tf.TensorSpec([], tf.int32)])
    rng = np.random.default_rng(1)
    for k, shape in enumerate(SHAPES):
        x = rng.standard_normal(shape).astype(np.float32)
        for i in (0, 1, 2, 3, -1, 7 + k):
            _check(exe, dt, _switch, [x, np.int32(i)])


def _loop_with_cond(x, n):
    """A conditional inside a while body: even steps grow the state."""
    def body(i, acc):
        acc = tf.cond(i % 2 == 0, lambda: tf.tanh(acc * 1.5 + 0.1), lambda: acc - 0.25)
        return i + 1, acc

    return tf.while_loop(lambda i, acc: i < n, body, [tf.constant(0), x])


def test_conditional_inside_a_while_body(compiler):
    exe, dt = _compile(compiler, _loop_with_cond, [tf.TensorSpec([None, None], F),
                                                   tf.TensorSpec([], tf.int32)])
    rng = np.random.default_rng(2)
    for shape, n in [((2, 3), 5), ((0, 4), 3), ((3, 1), 0), ((1, 1), 1), ((4, 7), 6),
                     ((5, 0), 2), ((1, 9), 9)]:
        _check(exe, dt, _loop_with_cond,
               [rng.standard_normal(shape).astype(np.float32), np.int32(n)])


def test_a_loop_body_with_a_branch_frees_its_scratch_per_iteration(compiler):
    """The body is several steps (segments around the branch): their results
    are freed once the body's outputs are copied out, so the scratch live at
    once does not grow with the trip count."""
    exe, dt = _compile(compiler, _loop_with_cond, [tf.TensorSpec([None, None], F),
                                                   tf.TensorSpec([], tf.int32)])
    x = np.ones((64, 64), np.float32)
    peaks = []
    for n in (3, 60):
        exe([x, np.int32(n)], dt)
        peaks.append(exe.peak_temp_bytes)
    assert peaks[0] >= x.nbytes and peaks[1] == peaks[0], peaks


def test_branch_rank_mismatch_is_not_compilable():
    def ranks(x, p):
        return tf.cond(p, lambda: x, lambda: tf.reduce_sum(x, 0))

    _, data, inputs = function_request(ranks, [tf.TensorSpec([None, None], F),
                                            tf.TensorSpec([], tf.bool)])
    with pytest.raises(Unsupported, match="branches must agree in dtype and rank"):
        lower_graph(parse_function_def(data), inputs, nested_functions(data))


def _pass_through(x, p):
    """A branch returning its argument unchanged, the other a constant."""
    return tf.cond(p, lambda: x, lambda: tf.zeros_like(x) + 2.0)


def _constants(x, p):
    """Branches that capture nothing: the conditional has no arguments."""
    return x * tf.cond(p, lambda: tf.constant(3.0), lambda: tf.constant(-1.0))


def _nested(x, p):
    """A conditional inside a branch, with two results of different dtypes."""
    def outer():
        inner = tf.cond(tf.reduce_sum(x) > 0.0, lambda: x * 2.0, lambda: -x)
        return inner, tf.shape(x)[0]

    return tf.cond(p, outer, lambda: (tf.exp(x), tf.constant(-1)))


def _loop_in_branch(x, p):
    """A while loop inside a branch, its carried tensor growing."""
    def grow():
        return tf.while_loop(lambda i, a: i < 3,
                             lambda i, a: (i + 1, tf.concat([a, a[:1] * 2.0], 0)), [0, x],
                             shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])[1]

    return tf.cond(p, grow, lambda: x - 1.0)


def _cond_in_loop_cond(x, p):
    """A conditional inside a while loop's cond function."""
    return tf.while_loop(lambda i, a: tf.cond(p, lambda: i < 4, lambda: i < 2),
                         lambda i, a: (i + 1, a * 1.5), [0, x])[1]


def _single_branch(x, i):
    """A Case of one branch: every index runs it."""
    return tf.switch_case(i, [lambda: tf.sigmoid(x)])


@pytest.mark.parametrize("fn, selector", [(_pass_through, tf.bool), (_constants, tf.bool),
                                          (_nested, tf.bool), (_loop_in_branch, tf.bool),
                                          (_cond_in_loop_cond, tf.bool),
                                          (_single_branch, tf.int32)])
def test_edge_conditionals_against_tf(compiler, fn, selector):
    exe, dt = _compile(compiler, fn, [tf.TensorSpec([None], F), tf.TensorSpec([], selector)])
    rng = np.random.default_rng(3)
    picks = [np.bool_(True), np.bool_(False)] if selector == tf.bool else \
        [np.int32(i) for i in (0, 1, -3)]
    for n in (0, 1, 5, 8):
        x = rng.standard_normal(n).astype(np.float32)
        for pick in picks:
            _check(exe, dt, fn, [x, pick])
            _check(exe, dt, fn, [np.abs(x), pick])
