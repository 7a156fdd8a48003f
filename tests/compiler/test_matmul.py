"""MatMul / BatchMatMul(V2) / Einsum -> dot -> rt->gemm, on the ctypes
harness (its rt->gemm is numpy): many shapes incl. 0 and 1 dims, transposes,
batch broadcasting (static and dynamic size-1 dims), fused producers and
consumers, TF's error messages, equations left to TF."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler.ops.matmul import einsum_plan

from .harness import DiscError

F = tf.float32


def _spec(rank, dt=F):
    return tf.TensorSpec([None] * rank, dt)


def _rand(shape, seed, dt=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dt)


def _check(exe, out_dt, fn, inputs, rtol=1e-5):
    got = exe(inputs, out_dt)
    want = fn(*[tf.constant(x) for x in inputs])
    want = want if isinstance(want, (tuple, list)) else [want]
    for g, w in zip(got, want):
        w = w.numpy()
        assert g.shape == w.shape, (g.shape, w.shape)
        scale = max(1.0, float(np.abs(w).max())) if w.size else 1.0
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale)


MM_SHAPES = [(3, 4, 5), (0, 4, 5), (3, 0, 5), (3, 4, 0), (1, 1, 1), (1, 7, 1), (7, 1, 9),
             (33, 65, 17), (2, 3, 64)]


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_transposes(compiler, ta, tb):
    def fn(a, b):
        return tf.matmul(a, b, transpose_a=ta, transpose_b=tb)
    exe, out_dt = compiler.executable(fn, [_spec(2), _spec(2)])
    for i, (m, k, n) in enumerate(MM_SHAPES):
        a = _rand((k, m) if ta else (m, k), i)
        b = _rand((n, k) if tb else (k, n), 100 + i)
        _check(exe, out_dt, fn, [a, b])
        for call in exe.gemm_calls:
            assert (call["trans_a"], call["trans_b"]) == (int(ta), int(tb))


def test_matmul_f64_and_fused_chain(compiler):
    def fn(x, w, b):
        h = tf.matmul(tf.tanh(x) * 2.0, w)
        return tf.nn.relu(tf.nn.bias_add(h, b)), h - 1.0
    exe, out_dt = compiler.executable(fn, [_spec(2, tf.float64), _spec(2, tf.float64),
                                           _spec(1, tf.float64)])
    for i, (m, k, n) in enumerate(MM_SHAPES):
        _check(exe, out_dt, fn, [_rand((m, k), i, np.float64), _rand((k, n), 7 + i, np.float64),
                                 _rand((n,), 9 + i, np.float64)], rtol=1e-10)
        assert all(c["dtype"] == 2 for c in exe.gemm_calls)


def test_chained_matmuls_and_returned_dot(compiler):
    def fn(x, w1, w2):
        h = tf.matmul(x, w1)
        return tf.matmul(tf.nn.relu(h), w2), h
    exe, out_dt = compiler.executable(fn, [_spec(2)] * 3)
    for i, (m, k, n) in enumerate([(3, 4, 5), (1, 1, 1), (0, 2, 3), (16, 8, 4)]):
        _check(exe, out_dt, fn, [_rand((m, k), i), _rand((k, n), i + 1), _rand((n, 6), i + 2)])


def test_matmul_size_mismatch_message(compiler):
    exe, out_dt = compiler.executable(tf.matmul, [_spec(2), _spec(2)])
    with pytest.raises(DiscError) as e:
        exe([np.zeros((2, 3), np.float32), np.zeros((4, 5), np.float32)], out_dt)
    assert e.value.code == 3
    assert "Matrix size-incompatible: In[0]: [2,3], In[1]: [4,5]" in e.value.message


BMM_CASES = [
    ((2, 3, 4), (2, 4, 5)), ((1, 3, 4), (6, 4, 5)), ((6, 3, 4), (1, 4, 5)),
    ((0, 3, 4), (1, 4, 5)), ((2, 0, 4), (2, 4, 5)), ((2, 3, 0), (2, 0, 5)),
    ((1, 1, 1), (1, 1, 1)), ((3, 5, 2), (3, 2, 1)),
]


@pytest.mark.parametrize("adj_x,adj_y", [(False, False), (True, True), (False, True)])
def test_batch_matmul_v2_broadcast(compiler, adj_x, adj_y):
    def fn(a, b):
        return tf.matmul(a, b, adjoint_a=adj_x, adjoint_b=adj_y)
    exe, out_dt = compiler.executable(fn, [_spec(3), _spec(3)])
    for i, (sa, sb) in enumerate(BMM_CASES):
        a = _rand(sa[:-2] + ((sa[-1], sa[-2]) if adj_x else sa[-2:]), i)
        b = _rand(sb[:-2] + ((sb[-1], sb[-2]) if adj_y else sb[-2:]), 50 + i)
        _check(exe, out_dt, fn, [a, b])


def test_batch_matmul_rank4_broadcast_and_lower_rank(compiler):
    exe, out_dt = compiler.executable(tf.matmul, [_spec(4), _spec(4)])
    for i, (sa, sb) in enumerate([((2, 3, 4, 5), (2, 3, 5, 6)), ((2, 1, 4, 5), (1, 3, 5, 6)),
                                  ((1, 3, 4, 5), (2, 1, 5, 6)), ((2, 3, 1, 5), (1, 1, 5, 1))]):
        _check(exe, out_dt, tf.matmul, [_rand(sa, i), _rand(sb, 9 + i)])
    exe, out_dt = compiler.executable(tf.matmul, [_spec(3), _spec(2)])
    for i, (sa, sb) in enumerate([((4, 3, 5), (5, 6)), ((1, 3, 5), (5, 2)), ((0, 3, 5), (5, 2))]):
        _check(exe, out_dt, tf.matmul, [_rand(sa, i), _rand(sb, 9 + i)])
    # [B,S,D] x [D,N]: one GEMM with the batch folded into M
    exe([_rand((4, 3, 5), 0), _rand((5, 6), 1)], out_dt)
    assert [(c["batch"], c["m"]) for c in exe.gemm_calls] == [(1, 12)]


def test_batch_matmul_messages(compiler):
    exe, out_dt = compiler.executable(tf.matmul, [_spec(3), _spec(3)])
    with pytest.raises(DiscError, match=r"In\[0\] and In\[1\] must have compatible batch "
                       r"dimensions: \[2,3,4\] vs. \[5,4,6\]"):
        exe([np.zeros((2, 3, 4), np.float32), np.zeros((5, 4, 6), np.float32)], out_dt)
    with pytest.raises(DiscError, match=r"Matrix size-incompatible: In\[0\]: \[2,3,4\], "
                       r"In\[1\]: \[2,5,6\]"):
        exe([np.zeros((2, 3, 4), np.float32), np.zeros((2, 5, 6), np.float32)], out_dt)

    def v1(a, b):
        return tf.raw_ops.BatchMatMul(x=a, y=b)
    exe, out_dt = compiler.executable(v1, [_spec(3), _spec(3)])
    _check(exe, out_dt, v1, [_rand((2, 3, 4), 0), _rand((2, 4, 5), 1)])
    with pytest.raises(DiscError, match=r"In\[0\].dim\(0\) and In\[1\].dim\(0\) must be the same"):
        exe([np.zeros((2, 3, 4), np.float32), np.zeros((3, 4, 6), np.float32)], out_dt)


EINSUMS = [
    ("abc,cd->abd", (2, 3, 4), (4, 5)),
    ("bhqd,bhkd->bhqk", (2, 3, 4, 8), (2, 3, 5, 8)),
    ("bhqk,bhkd->bhqd", (2, 3, 4, 5), (2, 3, 5, 8)),
    ("bqhd,bkhd->bhqk", (2, 4, 3, 8), (2, 5, 3, 8)),
    ("abc,cde->abde", (2, 3, 4), (4, 5, 6)),
    ("abcd,cde->abe", (2, 3, 4, 5), (4, 5, 6)),
    ("ij,kj->ik", (3, 4), (5, 4)),
    ("ij,jk->ki", (3, 4), (4, 5)),
]


@pytest.mark.parametrize("eq,sa,sb", EINSUMS)
def test_einsum_patterns(compiler, eq, sa, sb):
    plan, reason = einsum_plan(eq)
    assert plan is not None, reason

    def fn(a, b):
        return tf.einsum(eq, a, b)
    exe, out_dt = compiler.executable(fn, [_spec(len(sa)), _spec(len(sb))])
    _check(exe, out_dt, fn, [_rand(sa, 1), _rand(sb, 2)])
    ones = [tuple(1 if j == i else d for j, d in enumerate(sa)) for i in range(len(sa))]
    zero = tuple(0 if j == 0 else d for j, d in enumerate(sa))
    for i, s in enumerate(ones + [zero]):
        # size-1 / size-0 dims of a label must match in b (same label, same size)
        labels_a, labels_b = eq.split("->")[0].split(",")
        size = dict(zip(labels_a, s))
        t = tuple(size.get(c, d) for c, d in zip(labels_b, sb))
        _check(exe, out_dt, fn, [_rand(s, i), _rand(t, 10 + i)])


@pytest.mark.parametrize("eq,why", [
    ("ii,ij->i", "repeated"), ("ij->j", "1 operands"), ("ij,jk", "implicit"),
    ("a...b,bc->ac", "ellipsis summed"), ("ij,jk,kl->il", "3 operands"),
    ("a...b,bc->a...c", None), ("ijk,ikl->ijkl", None), ("bi,bi->b", None),
    ("bij,jk->bk", "reduction"), ("bqd,bkd->bqk", None), ("ijk,ikl->jil", None),
    ("bhqk,bkhd->bqhd", None)])
def test_einsum_plan_reasons(eq, why):
    plan, reason = einsum_plan(eq)
    if why is None:
        assert plan is not None, reason
    else:
        assert plan is None and why in reason, (eq, reason)


def test_registered_in_support_table():
    from blade_disc_tf.compiler.registry import support_table
    ops = support_table()["ops"]
    for name in ("MatMul", "BatchMatMul", "BatchMatMulV2", "Einsum"):
        assert name in ops


def dense_epilogue(x, w, b, r):
    return tf.nn.gelu(x @ w + b, approximate=True) * 0.5 + r


def test_dense_epilogue_is_one_pass_over_the_gemm_output(compiler, tmp_path):
    # bias, GELU, scale and residual add: one loop kernel reading the GEMM's
    # output once (the GEMM itself is the runtime's; no in-tile epilogue yet)
    # in the speculated version (bias and residual do not broadcast their
    # symbolic dims); the general version needs a second kernel
    from blade_disc_tf.compiler.options import CompileOptions
    specs = [_spec(2), _spec(2), _spec(1), _spec(2)]
    concrete = tf.function(dense_epilogue).get_concrete_function(*specs)
    reply = compiler.compile(concrete, CompileOptions(cache_dir=compiler.options.cache_dir,
                                                      dump_dir=str(tmp_path)))
    assert reply["ok"], reply
    (final,) = tmp_path.glob("*/*/speculated/ir_*_assign_buffers.mlir")
    tops = [ln.split(" = ")[1].split("(")[0] for ln in final.read_text().splitlines()
            if ln.startswith("  %") and " = " in ln]
    assert tops.count("dot") == 1 and tops.count("fusion") == 1, tops
    exe, out_dt = compiler.executable(dense_epilogue, specs)
    for m in (1, 7, 64):
        _check(exe, out_dt, dense_epilogue,
               [_rand((m, 32), 1), _rand((32, 48), 2), _rand((48,), 3), _rand((m, 48), 4)])
