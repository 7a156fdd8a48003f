"""Stitch fusion (passes/stitch.py, codegen/cpu/stitch.py): row reductions with
their elementwise producers and consumers in one row kernel.  IR snippets
for the pass; softmax / LayerNorm / moments patterns against TF over many
shapes through the ctypes harness."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler.ir.parser import parse_func
from blade_disc_tf.compiler.ir.printer import print_func
from blade_disc_tf.compiler.ir.verifier import verify
from blade_disc_tf.compiler.passes.pipeline import run_pipeline
from blade_disc_tf.compiler.passes.stitch import stitch
from blade_disc_tf.compiler.target import get_target

CPU_PASSES = get_target("cpu").passes()

from .harness import DiscError

F = tf.float32
rng = np.random.default_rng(11)

SOFTMAX_IR = """func @f(%arg0: f32[s0,s1]) {
  %v0 = reduce(%arg0) {"dimensions": [1],"kind": "max_ignore_nan"} : f32[s0,1]
  %v1 = broadcast_in_dim(%v0) {"broadcast_dimensions": [0,1]} : f32[s0,s1]
  %v2 = subtract(%arg0, %v1) : f32[s0,s1]
  %v3 = exponential(%v2) : f32[s0,s1]
  %v4 = reduce(%v3) {"dimensions": [1],"kind": "sum"} : f32[s0,1]
  %v5 = broadcast_in_dim(%v4) {"broadcast_dimensions": [0,1]} : f32[s0,s1]
  %v6 = divide(%v3, %v5) : f32[s0,s1]
  return(%v6, %v4)
}
"""


def _source(info) -> str:
    """A stitch kernel's C++ under its name (codegen/kernel_code.py)."""
    return info.code.text(info.name)


def _stitches(func):
    return [op for op in func.ops if op.name == "stitch"]


def _stitch_kernel(ir: str):
    """The one stitch kernel the pass makes of ir."""
    from blade_disc_tf.compiler.codegen.cpu.stitch import build_stitch
    (st,) = _stitches(verify(stitch(parse_func(ir))))
    return build_stitch(st, {}, 0)


def _stitch_source(ir: str) -> str:
    """C++ of the one stitch the pass makes of ir."""
    return _source(_stitch_kernel(ir))


def _named(text: str, info) -> str:
    """text with IR names in braces ({v5}) as the kernel's C++ locals."""
    return text.format(**info.locals)


def test_softmax_ir_becomes_one_stitch_with_both_outputs():
    func = verify(stitch(parse_func(SOFTMAX_IR)))
    (st,) = _stitches(func)
    assert func.ops == [st]
    assert [op.name for op in st.region.ops].count("reduce") == 2
    assert [r.type for r in st.results] == [r.type for r in st.region.outputs]
    assert [r.name for r in st.region.outputs] == ["v4", "v6"]   # program order
    assert func.rets == [st.results[1], st.results[0]]
    again = parse_func(print_func(func))       # prints and parses back
    assert print_func(again) == print_func(func)


def test_group_stays_convex_around_a_dot():
    # the reduce feeds a dot whose result feeds the row work: one kernel
    # cannot run both before and after the dot
    text = """func @f(%arg0: f32[s0,s1], %arg1: f32[s1,s1]) {
  %v0 = reduce(%arg0) {"dimensions": [1],"kind": "sum"} : f32[s0,1]
  %v1 = broadcast_in_dim(%v0) {"broadcast_dimensions": [0,1]} : f32[s0,s1]
  %v2 = subtract(%arg0, %v1) : f32[s0,s1]
  %v3 = dot(%v2, %arg1) {"batch_lhs": [], "batch_rhs": [], "lhs_contract": [1], "lhs_free": [0], "rhs_contract": [0], "rhs_free": [1]} : f32[s0,s1]
  %v4 = add(%v3, %v2) : f32[s0,s1]
  %v5 = reduce(%v4) {"dimensions": [1],"kind": "max"} : f32[s0,1]
  return(%v5)
}
"""
    func = verify(stitch(parse_func(text)))
    names = [op.name for op in func.ops]
    assert names == ["stitch", "dot", "stitch"], names
    first, _, second = func.ops
    assert "add" not in [o.name for o in first.region.ops]
    assert "add" in [o.name for o in second.region.ops]


def test_next_layers_broadcast_is_not_exported():
    # %v6 (layer 2's gamma over the rows) joins group 1 through the shared
    # %v1 and layer 2's multiply, which waits for the dot: it must stay with
    # layer 2's group, not be written out by group 1 at the row shape
    text = """func @f(%arg0: f32[s0,s1], %arg1: f32[s1,s1], %arg2: f32[s1]) {
  %v0 = reduce(%arg0) {"dimensions": [1],"kind": "sum"} : f32[s0,1]
  %v1 = broadcast_in_dim(%v0) {"broadcast_dimensions": [0,1]} : f32[s0,s1]
  %v2 = subtract(%arg0, %v1) : f32[s0,s1]
  %v3 = dot(%v2, %arg1) {"batch_lhs": [], "batch_rhs": [], "lhs_contract": [1], "lhs_free": [0], "rhs_contract": [0], "rhs_free": [1]} : f32[s0,s1]
  %v4 = add(%v3, %v1) : f32[s0,s1]
  %v5 = reduce(%v4) {"dimensions": [1],"kind": "max"} : f32[s0,1]
  %v6 = broadcast_in_dim(%arg2) {"broadcast_dimensions": [1]} : f32[s0,s1]
  %v7 = broadcast_in_dim(%v5) {"broadcast_dimensions": [0,1]} : f32[s0,s1]
  %v8 = multiply(%v7, %v6) : f32[s0,s1]
  %v9 = multiply(%v8, %v4) : f32[s0,s1]
  return(%v9)
}
"""
    func = verify(stitch(parse_func(text)))
    names = [op.name for op in func.ops]
    assert names == ["stitch", "dot", "stitch"], names
    first, _, second = func.ops
    assert len(first.results) == 2, first.results          # %v1 and %v2, not %v6
    assert "v6" in [r.name for o in second.region.ops for r in o.results]


def test_non_last_dim_reduce_is_left_alone():
    text = """func @f(%arg0: f32[s0,s1]) {
  %v0 = reduce(%arg0) {"dimensions": [0],"kind": "sum"} : f32[1,s1]
  return(%v0)
}
"""
    assert not _stitches(stitch(parse_func(text)))


def test_pipeline_runs_stitch_before_loop_fusion():
    names = [n for n, _ in CPU_PASSES]
    assert names.index("stitch") < names.index("fuse")
    func = run_pipeline(parse_func(SOFTMAX_IR), CPU_PASSES)
    assert [op.name for op in func.ops] == ["stitch"]
    assert func.ops[0].attrs["buffers"] == ["out:1", "out:0"]


def check(compiler, fn, specs, inputs, tol=1e-5):
    exe, out_dt = compiler.executable(fn, specs)
    got = exe(inputs, out_dt)
    want = fn(*[tf.constant(x) for x in inputs])
    want = want if isinstance(want, (list, tuple)) else [want]
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        w = w.numpy()
        assert g.shape == w.shape and g.dtype == w.dtype, (fn.__name__, k, g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"{fn.__name__} {k}")
    return exe


def softmax(x):
    return tf.nn.softmax(x), tf.nn.log_softmax(x)


def masked_softmax(scores, mask):
    # BERT-style: scores [B,H,S,S] + (1 - mask[B,1,1,S]) * -1e4
    return tf.nn.softmax(scores + (1.0 - mask) * -10000.0)


def raw_layernorm(x, g, b):
    m = tf.reduce_mean(x, -1, keepdims=True)
    v = tf.reduce_mean(tf.square(x - m), -1, keepdims=True)
    return (x - m) * tf.math.rsqrt(v + 1e-5) * g + b


def moments_layernorm(x, g, b):
    m, v = tf.nn.moments(x, [-1], keepdims=True)
    return tf.nn.batch_normalization(x, m, v, b, g, 1e-3), m[..., 0]


def keras_layernorm(x, g, b):
    return keras.ops.layer_normalization(x, g, b, axis=-1, epsilon=1e-3)


def residual_layernorm(x, r, bias, g, b):
    # input fusion: bias add + residual feeding the statistics
    return keras_layernorm(x + bias + r, g, b)


def row_stats(x, y):
    # reductions with a runtime broadcast operand: y [s2] may be 1 or match
    z = x * y
    return tf.reduce_sum(z, -1), tf.reduce_max(tf.abs(z), -1, keepdims=True), z


S3 = tf.TensorSpec([None, None, None], F)
V = tf.TensorSpec([None], F)
SHAPES = [(2, 3, 768), (1, 1, 1), (3, 5, 7), (2, 0, 4), (1, 4, 0), (4, 17, 33), (1, 2, 9)]


def _x(shape):
    return (rng.standard_normal(shape) * 3).astype(np.float32)


def test_softmax_rows(compiler):
    for sh in SHAPES:
        check(compiler, softmax, [S3], [_x(sh)])


def test_softmax_extreme_rows(compiler):
    x = _x((3, 4, 9))
    x[0, 1, 2] = np.nan
    x[1, 2, :] = -np.inf
    x[2, 0, 3] = np.inf
    x[2, 1, 4] = 1e30
    x[0, 2, :] = -1e30
    exe, out_dt = compiler.executable(softmax, [S3])
    got = exe([x], out_dt)
    want = [w.numpy() for w in softmax(tf.constant(x))]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_masked_softmax(compiler):
    spec = [tf.TensorSpec([None] * 4, F), tf.TensorSpec([None, 1, 1, None], F)]
    for b, h, s in [(2, 3, 5), (1, 12, 64), (3, 1, 1), (2, 2, 17)]:
        mask = (rng.random((b, 1, 1, s)) > 0.3).astype(np.float32)
        check(compiler, masked_softmax, spec, [_x((b, h, s, s)), mask])


@pytest.mark.parametrize("fn", [raw_layernorm, moments_layernorm, keras_layernorm])
@pytest.mark.parametrize("channels", [None, 33])
def test_layernorm_patterns(compiler, fn, channels):
    # channels None: gamma/beta [s3] may broadcast against x's [.., s2]
    if fn is keras_layernorm and channels is None:
        pytest.skip("Keras reshapes gamma to the static channel count")
    spec = [tf.TensorSpec([None, None, channels], F), tf.TensorSpec([channels], F),
            tf.TensorSpec([channels], F)]
    for sh in SHAPES if channels is None else [(2, 3, 33), (1, 1, 33), (4, 0, 33)]:
        c = sh[-1]
        check(compiler, fn, spec, [_x(sh) + 5.0, _x((c,)), _x((c,))], tol=2e-4)


def test_residual_layernorm(compiler):
    x3, v = tf.TensorSpec([None, None, 24], F), tf.TensorSpec([24], F)
    spec = [x3, x3, v, v, v]
    for sh in [(2, 3, 24), (1, 7, 24), (3, 1, 24), (2, 0, 24)]:
        c = sh[-1]
        check(compiler, residual_layernorm, spec,
              [_x(sh), _x(sh), _x((c,)), _x((c,)), _x((c,))], tol=2e-4)


def test_runtime_broadcast_inside_rows(compiler):
    spec = [S3, V]
    for sh, ylen in [((2, 3, 4), 4), ((2, 3, 4), 1), ((1, 1, 1), 1), ((3, 2, 1), 5)]:
        check(compiler, row_stats, spec, [_x(sh), _x((ylen,))])


def test_incompatible_broadcast_is_tf_error(compiler):
    exe, out_dt = compiler.executable(row_stats, [S3, V])
    with pytest.raises(DiscError) as e:
        exe([_x((2, 3, 4)), _x((3,))], out_dt)
    assert e.value.code == 3      # INVALID_ARGUMENT, as TF


def int_rows(x, k):
    return tf.reduce_sum(x * k, -1), tf.reduce_max(x, -1) - tf.reduce_min(x, -1), x // k


def test_int_rows_and_division_error(compiler):
    spec = [tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None, None], tf.int32)]
    x = rng.integers(-9, 9, (5, 11)).astype(np.int32)
    k = rng.integers(1, 4, (5, 11)).astype(np.int32)
    check(compiler, int_rows, spec, [x, k])
    exe, out_dt = compiler.executable(int_rows, spec)
    k[2, 3] = 0
    with pytest.raises(DiscError, match="Integer division by zero"):
        exe([x, k], out_dt)


def rank1(x):
    return tf.nn.softmax(x), tf.reduce_mean(x)


def test_rank1_rows(compiler):
    for n in [1, 5, 300, 0]:
        check(compiler, rank1, [V], [_x((n,))])


def scalar_inside(x, s):
    c = tf.exp(s) * 2.0                 # rank 0, computed in the row kernel
    return tf.nn.softmax(x * c), c + 1.0, c


def test_scalar_values_inside_rows_and_returned(compiler):
    spec = [S3, tf.TensorSpec([], F)]
    for sh in [(3, 5, 7), (1, 1, 1), (0, 2, 3)]:
        check(compiler, scalar_inside, spec, [_x(sh), np.float32(0.3)])


def test_broadcast_along_rows_of_an_in_group_value_is_not_stitched():
    # %v1 [s0,s1] is per row of [s0,s1,s1] and also broadcast along the rows
    # (dims [0,2]): that second read needs memory, so it leaves the kernel
    text = """func @f(%arg0: f32[s0,s1,s1]) {
  %v0 = reduce(%arg0) {"dimensions": [2],"kind": "sum"} : f32[s0,s1]
  %v1 = exponential(%v0) : f32[s0,s1]
  %v2 = broadcast_in_dim(%v1) {"broadcast_dimensions": [0,1]} : f32[s0,s1,s1]
  %v3 = broadcast_in_dim(%v1) {"broadcast_dimensions": [0,2]} : f32[s0,s1,s1]
  %v4 = add(%v2, %v3) : f32[s0,s1,s1]
  %v5 = multiply(%v4, %arg0) : f32[s0,s1,s1]
  return(%v5)
}
"""
    func = verify(stitch(parse_func(text)))
    (st,) = _stitches(func)
    names = [o.name for o in st.region.ops]
    assert "add" not in names and names.count("broadcast_in_dim") <= 1, names
    out = run_pipeline(parse_func(text), CPU_PASSES)
    assert [o.name for o in out.ops] == ["stitch", "fusion"]


def cross_rows(x):
    s = tf.reduce_sum(x, -1)                         # [b, n] per row of [b, n, n]
    return tf.nn.softmax(x + s[:, :, None] + s[:, None, :])


def test_cross_row_broadcast_vs_tf(compiler):
    for sh in [(2, 5, 5), (1, 1, 1), (3, 8, 8), (2, 0, 0)]:
        check(compiler, cross_rows, [S3], [_x(sh)], tol=1e-4)


def row_reductions(x):
    # max_ignore_nan and a sum of its exps (softmax's vector lanes) next to a
    # plain sum, product and NaN-propagating max (scalar lanes for max)
    e = tf.exp(x - tf.reduce_max(x, -1, keepdims=True))
    return (tf.reduce_sum(e, -1), tf.reduce_sum(x * x, -1, keepdims=True) * x,
            tf.reduce_prod(x * 0.01 + 1.0, -1), tf.reduce_max(x, -1))


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_row_reduce_lanes_every_tail(compiler, dtype):
    # row lengths around the vector widths (8 / 16 lanes, four registers of
    # them per step): each mix of wide loop, one-register loop and scalar
    # tail, with NaN/inf/huge entries in every position class
    exe, out_dt = compiler.executable(row_reductions, [tf.TensorSpec([None, None], dtype)])
    # (1023..3089: float sums cross codegen/cpu/row_reduce.py's SUM_BLOCK)
    for n in [1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 80, 127, 130, 200,
              1023, 1024, 1025, 1040, 2048 + 17, 3089]:
        x = (rng.standard_normal((6, n)) * 3).astype(dtype.as_numpy_dtype)
        x[1, rng.integers(n)] = np.nan
        x[2, n - 1] = np.inf
        x[3, 0] = -np.inf
        x[4, rng.integers(n)] = 1e30
        got = exe([x], out_dt)
        want = [w.numpy() for w in row_reductions(tf.constant(x))]
        for k, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"n={n} out {k}")
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6, err_msg=f"n={n} out {k}")


def row_sums(x):
    return tf.reduce_sum(x, -1), tf.reduce_mean(x * x, -1)


def test_long_float_row_sums_stay_accurate(compiler):
    # float lanes are folded into double every SUM_BLOCK elements: rows far
    # longer than a block (a large offset; a huge first element that
    # absorbs what a float-only lane would add to it) stay within a few
    # float ulps of the exact float64 sum (float-only lanes: 1.5e-5 off)
    exe, out_dt = compiler.executable(row_sums, [tf.TensorSpec([None, None], F)])
    for n in [5000, 100003]:
        x = (1000.0 + rng.standard_normal((3, n))).astype(np.float32)
        x[1] = 1.0 + 0.1 * rng.standard_normal(n)
        x[1, 0] = 1e8      # float lanes drop every later 1.0 added to it
        got = exe([x], out_dt)
        x64 = x.astype(np.float64)
        for g, w in zip(got, [x64.sum(-1), (x64 * x64).mean(-1)]):
            np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=f"n={n}")


def _shift_exp_ir(shift_of: str) -> str:
    return f"""func @f(%arg0: f32[s0,s1], %arg1: f32[s0,s1]) {{
  %v0 = reduce(%{shift_of}) {{"dimensions": [1],"kind": "max_ignore_nan"}} : f32[s0,1]
  %v1 = broadcast_in_dim(%v0) {{"broadcast_dimensions": [0,1]}} : f32[s0,s1]
  %v2 = subtract(%arg0, %v1) : f32[s0,s1]
  %v3 = exponential(%v2) {{"fast": true}} : f32[s0,s1]
  %v4 = reduce(%v3) {{"dimensions": [1],"kind": "sum"}} : f32[s0,1]
  return(%v4)
}}
"""


@pytest.mark.parametrize("shift_of,nonpos", [("arg0", True), ("arg1", False)])
def test_exp_of_x_minus_its_row_max_drops_the_upper_clamp(shift_of, nonpos):
    # x - max(x) <= 0: disc_exp_fast_nonpos; x - max(y) may be positive
    from blade_disc_tf.compiler.codegen.cpu.stitch import build_stitch
    (st,) = _stitches(verify(stitch(parse_func(_shift_exp_ir(shift_of)))))
    src = _source(build_stitch(st, {}, 0))
    assert ("disc_exp_fast_nonpos(" in src) == nonpos
    assert ("disc_exp_fast(" in src) != nonpos


def _nan_select_ir(pred_of: str, extra_use: bool) -> str:
    """Softmax's select(is_nan(z), inf, exp(z)) with the predicate on
    %{pred_of}; extra_use: exp(z) also summed directly."""
    total = "%v3" if extra_use else "%v6"
    return f"""func @f(%arg0: f32[s0,s1], %arg1: f32[s0,s1]) {{
  %v0 = reduce(%arg0) {{"dimensions": [1],"kind": "max_ignore_nan"}} : f32[s0,1]
  %v1 = broadcast_in_dim(%v0) {{"broadcast_dimensions": [0,1]}} : f32[s0,s1]
  %v2 = subtract(%arg0, %v1) : f32[s0,s1]
  %v3 = exponential(%v2) {{"fast": true}} : f32[s0,s1]
  %v4 = constant() {{"value": [Infinity]}} : f32[]
  %v5 = broadcast_in_dim(%v4) {{"broadcast_dimensions": []}} : f32[s0,s1]
  %v7 = is_nan(%{pred_of}) : i1[s0,s1]
  %v6 = select(%v7, %v5, %v3) : f32[s0,s1]
  %v8 = reduce({total}) {{"dimensions": [1],"kind": "sum"}} : f32[s0,1]
  %v9 = reduce(%v6) {{"dimensions": [1],"kind": "max"}} : f32[s0,1]
  return(%v8, %v9)
}}
"""


@pytest.mark.parametrize("pred_of,extra_use,nan_free", [
    ("v2", False, True), ("arg1", False, False), ("v2", True, False)])
def test_exp_whose_nan_results_are_replaced_clamps_by_integer_min(pred_of, extra_use, nan_free):
    # exp(z) read only through select(is_nan(z), inf, .): the _nan_free
    # variant; a predicate on another value, or another use, keeps NaN
    from blade_disc_tf.compiler.codegen.cpu.stitch import build_stitch
    (st,) = _stitches(verify(stitch(parse_func(_nan_select_ir(pred_of, extra_use)))))
    src = _source(build_stitch(st, {}, 0))
    assert ("disc_exp_fast_nonpos_nan_free(" in src) == nan_free
    assert ("disc_exp_fast_nonpos(" in src) != nan_free


_SCALED_SOFTMAX_IR = """func @f(%arg0: f32[s0,s1], %arg1: f32[s0,s1]) {
  %v0 = multiply(%arg0, %arg1) : f32[s0,s1]
  %v1 = reduce(%v0) {"dimensions": [1],"kind": "max_ignore_nan"} : f32[s0,1]
  %v2 = broadcast_in_dim(%v1) {"broadcast_dimensions": [0,1]} : f32[s0,s1]
  %v3 = subtract(%v0, %v2) : f32[s0,s1]
  %v4 = exponential(%v3) {"fast": true} : f32[s0,s1]
  %v5 = reduce(%v4) {"dimensions": [1],"kind": "sum"} : f32[s0,1]
  return(%v5)
}
"""


def test_row_max_combines_in_the_loop_that_stores_its_input():
    # the max of x * y: the blocks of the loop storing x * y feed the max
    # lanes (no second pass over the row), and a last half block of 16
    # too; the scalar tail keeps its max in a local; the sum of exp stays a pass
    info = _stitch_kernel(_SCALED_SOFTMAX_IR)
    src = _source(info)
    assert src.count("for (int u = 0; u < 32; ++u)") == 1
    assert src.count("for (int u = 0; u < 16; ++u)") == 1
    assert src.count("std::memcpy(&x, s0 + j0") == 3
    assert "m = s0[j] > m ? s0[j] : m;" in src
    assert _named("a_{v5}_s", info) in src   # the float sum: its own blocked pass


_TWICE_BROADCAST_IR = """func @f(%arg0: f32[s0,s1], %arg1: f32[s1]) {
  %v0 = reduce(%arg0) {"dimensions": [1],"kind": "sum"} : f32[s0,1]
  %v1 = broadcast_in_dim(%v0) {"broadcast_dimensions": [0,1]} : f32[s0,s1]
  %v2 = broadcast_in_dim(%arg1) {"broadcast_dimensions": [1]} : f32[s0,s1]
  %v3 = multiply(%v2, %v1) : f32[s0,s1]
  %v4 = broadcast_in_dim(%arg1) {"broadcast_dimensions": [1]} : f32[s0,s1]
  %v5 = multiply(%v4, %arg0) : f32[s0,s1]
  %v6 = add(%v3, %v5) : f32[s0,s1]
  return(%v6)
}
"""


def test_equal_broadcasts_share_one_load_index():
    # Keras LayerNorm's gamma, broadcast twice: one index (b0), so both
    # reads are one expression the C++ compiler loads once
    from blade_disc_tf.compiler.codegen.cpu.stitch import build_stitch
    (st,) = _stitches(verify(stitch(parse_func(_TWICE_BROADCAST_IR))))
    info = build_stitch(st, {}, 0)
    assert len(info.loads) == 1
    assert _source(info).count("c.p0[b0 + j]") == 2 and "b1" not in _source(info)


def test_row_reductions_fold_lanes_by_shuffles():
    # the end of each row reduction is on the row's critical path: the 16
    # float max lanes fold in 4 shuffle steps and the 8 double sum lanes in
    # 3, not one lane at a time
    from blade_disc_tf.compiler.codegen.cpu.stitch import build_stitch
    (st,) = _stitches(verify(stitch(parse_func(_shift_exp_ir("arg0")))))
    src = _source(build_stitch(st, {}, 0))
    assert "for (int u = 1;" not in src
    folds = [ln for ln in src.splitlines() if "const auto q = __builtin_shufflevector" in ln]
    assert len(folds) == 4 + 3, folds


# _SCALED_SOFTMAX_IR with arg0 + arg1, arg1's last dim broadcast (1 or s1)
_BROADCAST_MASK_SOFTMAX_IR = _SCALED_SOFTMAX_IR.replace(
    "%arg1: f32[s0,s1]) {\n  %v0 = multiply(%arg0, %arg1)",
    "%arg1: f32[s0,s2]) {\n"
    '  %v9 = broadcast_in_dim(%arg1) {"broadcast_dimensions": [0,1]} : f32[s0,s1]\n'
    "  %v0 = add(%arg0, %v9)")


def test_row_max_combines_in_the_stride_1_copy_of_a_versioned_loop():
    # arg1's last dim may broadcast (runtime stride sj0): the stride-1 copy
    # of the loop storing arg0 + arg1 feeds the max lanes in its blocks; the
    # strided copy reduces in a pass of its own; neither copy is versioned again
    src = _stitch_source(_BROADCAST_MASK_SOFTMAX_IR)
    assert src.count("if (c.sj0 == 1)") == 1
    assert src.count("for (int u = 0; u < 32; ++u)") == 1
    assert src.count("c.p0[b0 + j * c.sj0]") == 1      # the strided copy only
    unit, strided = src.split("if (c.sj0 == 1)")[1].split("} else {", 1)
    assert "std::memcpy(&x, s0 + j0" in unit and "std::memcpy(&x, s0 + j0" not in strided


def test_row_index_advances_without_division_and_scratch_is_line_aligned():
    src = _stitch_source(_BROADCAST_MASK_SOFTMAX_IR)
    loop = src.split("for (int64_t r = begin; r < end; ++r) {", 1)[1]
    assert "%" not in loop and "/=" not in loop
    assert "std::aligned_alloc(64," in src and "std::malloc" not in src


def test_masked_softmax_mask_broadcast_along_rows(compiler):
    # the mask's last dim 1 (stride 0: the strided loop and its max pass)
    # or S (stride 1: the fused max), rows of length 1, odd, empty, and
    # rows split over parallel chunks mid-head (odometer restarts)
    spec = [tf.TensorSpec([None] * 4, F), tf.TensorSpec([None, 1, 1, None], F)]
    for b, h, s, ms in [(2, 3, 5, 1), (2, 3, 5, 5), (1, 12, 67, 1), (2, 12, 130, 130),
                        (3, 5, 131, 1), (3, 1, 1, 1), (2, 0, 4, 4), (2, 2, 33, 1)]:
        mask = (rng.random((b, 1, 1, ms)) > 0.3).astype(np.float32)
        check(compiler, masked_softmax, spec, [_x((b, h, s, s)), mask])


def test_masked_softmax_nan_and_inf_rows_as_tf(compiler):
    spec = [tf.TensorSpec([None] * 4, F), tf.TensorSpec([None, 1, 1, None], F)]
    exe, out_dt = compiler.executable(masked_softmax, spec)
    for ms in (1, 37):
        x = _x((2, 3, 37, 37))
        x[0, 1, 2, 5] = np.nan
        x[1, 2, 3, :] = -np.inf
        x[1, 0, 4, 7] = np.inf
        x[0, 0, 0, :] = np.nan
        mask = (rng.random((2, 1, 1, ms)) > 0.3).astype(np.float32)
        got = exe([x, mask], out_dt)[0]
        want = masked_softmax(tf.constant(x), tf.constant(mask)).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_masked_softmax_every_block_remainder(compiler, dtype):
    # rows of 32-blocks, a half block of 16 and a scalar tail, in every mix
    spec = [tf.TensorSpec([None] * 4, dtype), tf.TensorSpec([None, 1, 1, None], dtype)]
    nt = dtype.as_numpy_dtype
    for s in (15, 16, 17, 31, 47, 48, 63, 80, 95):
        mask = (rng.random((2, 1, 1, s)) > 0.3).astype(nt)
        check(compiler, masked_softmax, spec, [_x((2, 3, s, s)).astype(nt), mask])


LAYERNORM_IR = """func @f(%arg0: f32[s0,s1], %arg1: f32[s1], %arg2: f32[], %arg3: f32[s0,s1]) {
  %v0 = reduce(%arg0) {"dimensions": [1],"kind": "sum"} : f32[s0]
  %v1 = broadcast_in_dim(%v0) {"broadcast_dimensions": [0]} : f32[s0,s1]
  %v2 = broadcast_in_dim(%arg2) {"broadcast_dimensions": []} : f32[s0,s1]
  %v3 = divide(%v1, %v2) : f32[s0,s1]
  %v4 = squared_difference(%v3, %arg0) : f32[s0,s1]
  %v5 = reduce(%v4) {"dimensions": [1],"kind": "sum"} : f32[s0]
  %v6 = subtract(%arg0, %v3) : f32[s0,s1]
  %v7 = broadcast_in_dim(%v5) {"broadcast_dimensions": [0]} : f32[s0,s1]
  %v8 = rsqrt(%v7) : f32[s0,s1]
  %v9 = multiply(%v6, %v8) : f32[s0,s1]
  %v10 = broadcast_in_dim(%arg1) {"broadcast_dimensions": [1]} : f32[s0,s1]
  %v11 = multiply(%v9, %v10) : f32[s0,s1]
  %v12 = add(%arg3, %v6) : f32[s0,s1]
  %v13 = reduce(%v12) {"dimensions": [1],"kind": "max_ignore_nan"} : f32[s0]
  return(%v11, %v13)
}
"""


def test_layernorm_rows_recompute_instead_of_scratch():
    # x - mean (read by a later phase) and (mean - x)^2 (read by the
    # variance sum only) are recomputed from the input row: no scratch row
    # and no store loop for them; the max_ignore_nan input r + (x - mean)
    # stays stored (its lanes combine in the loop storing it)
    info = _stitch_kernel(LAYERNORM_IR)
    src, n = _source(info), lambda text: _named(text, info)
    assert n("s0[j] = {v12};") in src and "s1" not in src, src
    var_sum = src[src.index(n("double a_{v5}_s")):src.index(n("const float {v5} ="))]
    assert n("a_{v5}_ld(c.p2 + row + j + 48)") in var_sum, var_sum
    assert n("double(float(({v3} - c.p2[row + j]) * ({v3} - c.p2[row + j])))") in var_sum
    last = src[src.index(n("const float {v8} =")):]
    assert n("float(float(c.p2[row + j] - {v3}) * {v8})") in last, last


def test_recompute_skips_outputs_and_costly_ops():
    ir = LAYERNORM_IR.replace("return(%v11, %v13)", "return(%v11, %v6)").replace(
        "  %v12 = add(%arg3, %v6) : f32[s0,s1]\n  %v13 = reduce(%v12) "
        "{\"dimensions\": [1],\"kind\": \"max_ignore_nan\"} : f32[s0]\n", "")
    info = _stitch_kernel(ir)
    src = _source(info)
    # v6 is an output: stored in its phase, read back from scratch
    assert _named("s0[j] = {v6};", info) in src and _named("float(s0[j] * {v8})", info) in src
    info = _stitch_kernel(LAYERNORM_IR.replace("%v4 = squared_difference(%v3, %arg0)",
                                               "%v4 = maximum(%v3, %arg0)"))
    src = _source(info)
    assert _named("s0[j] = {v4};", info) in src and "std::memcpy(&x, s0 + j" in src   # stored


def layernorm_every_tail(x, r, g, b):
    y = keras_layernorm(x + r * 0.5, g, b)
    return y, tf.reduce_mean(tf.square(x - tf.reduce_mean(x, -1, keepdims=True)), -1)


def test_layernorm_row_lengths_and_specials(compiler):
    # row lengths around the vector widths and SUM_BLOCK, empty rows, and
    # NaN/inf inputs (their rows NaN as TF's)
    for n in [1, 2, 7, 15, 16, 17, 33, 63, 64, 65, 100, 768, 1025, 2100]:
        spec = [tf.TensorSpec([None, n], F)] * 2 + [tf.TensorSpec([n], F)] * 2
        exe, out_dt = compiler.executable(layernorm_every_tail, spec)
        for rows in (5, 0):
            x, r = _x((rows, n)) + 3.0, _x((rows, n))
            if rows:
                x[1, rng.integers(n)] = np.nan
                x[2, n - 1] = np.inf
                r[3, 0] = -np.inf
            inputs = [x, r, _x((n,)), _x((n,))]
            got = exe(inputs, out_dt)
            want = [w.numpy() for w in layernorm_every_tail(*[tf.constant(v) for v in inputs])]
            for k, (g, w) in enumerate(zip(got, want)):
                assert g.shape == w.shape
                np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"n={n} out {k}")
                np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-4, err_msg=f"n={n} out {k}")
