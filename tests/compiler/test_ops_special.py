"""Ops with their own shape rules or errors: Select/SelectV2, BiasAdd, AddN,
Const, pass-through ops, fills, integer errors; plus output plumbing."""
import numpy as np
import pytest
import tensorflow as tf

from .harness import DiscError
from .opwalk import run_against_tf as run

F, B, I = tf.float32, tf.bool, tf.int32
rng = np.random.default_rng(7)


def r(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def c(*shape):
    return rng.integers(0, 2, shape).astype(bool)


def select_v1(cond, x, y):
    return tf.raw_ops.Select(condition=cond, x=x, y=y)


def test_select_v1_variants(compiler):
    spec2 = tf.TensorSpec([None, None], F)
    run(compiler, select_v1, [tf.TensorSpec([None, None], B), spec2, spec2],
        [c(3, 4), r(3, 4), r(3, 4)])
    for n in (0, 1, 5):
        run(compiler, select_v1, [tf.TensorSpec([None], B), spec2, spec2],
            [c(n), r(n, 4), r(n, 4)])
    run(compiler, select_v1, [tf.TensorSpec([], B), spec2, spec2], [c(), r(2, 3), r(2, 3)])


def test_select_v1_errors(compiler):
    spec2 = tf.TensorSpec([None, None], F)
    exe, dt = compiler.executable(select_v1, [tf.TensorSpec([None], B), spec2, spec2])
    with pytest.raises(DiscError, match=r"Number of batches of 'then' must match size of "
                                        r"'cond', but saw: 3 vs. 2"):
        exe([c(2), r(3, 3), r(3, 3)], dt)
    with pytest.raises(DiscError, match=r"'then' and 'else' must have the same size.  but "
                                        r"received: \[3,3\] vs. \[3,4\]"):
        exe([c(3), r(3, 3), r(3, 4)], dt)


def select_v2(cond, x, y):
    return tf.raw_ops.SelectV2(condition=cond, t=x, e=y)


@pytest.mark.parametrize("shapes", [((2, 1, 4), (1, 3, 1), (2, 3, 4)),
                                    ((1, 1, 1), (5, 1, 2), (1, 4, 1)),
                                    ((0, 1, 1), (1, 2, 1), (1, 1, 3))])
def test_select_v2_three_way_broadcast(compiler, shapes):
    spec = tf.TensorSpec([None] * 3, F)
    run(compiler, select_v2, [tf.TensorSpec([None] * 3, B), spec, spec],
        [c(*shapes[0]), r(*shapes[1]), r(*shapes[2])])


def bias_add(x, b):
    return tf.nn.bias_add(x, b) * 2.0


def test_bias_add(compiler):
    for shape in [(2, 3, 4), (1, 1, 5), (0, 2, 3)]:
        run(compiler, bias_add, [tf.TensorSpec([None] * 3, F), tf.TensorSpec([None], F)],
            [r(*shape), r(shape[-1])])
    exe, dt = compiler.executable(bias_add, [tf.TensorSpec([None] * 3, F),
                                             tf.TensorSpec([None], F)])
    with pytest.raises(DiscError, match=r"Must provide as many biases as the last dimension "
                                        r"of the input tensor: \[3\] vs. \[1,2,4\]"):
        exe([r(1, 2, 4), r(3)], dt)


def add_n(a, b, d):
    return tf.add_n([a, b, d, a])


def test_add_n(compiler):
    spec = tf.TensorSpec([None, None], F)
    run(compiler, add_n, [spec] * 3, [r(3, 2), r(3, 2), r(3, 2)])
    exe, dt = compiler.executable(add_n, [spec] * 3)
    with pytest.raises(DiscError, match=r"must have the same size and shape.  Input 0: "
                                        r"\[3,2\] != input 1: \[3,1\]"):
        exe([r(3, 2), r(3, 1), r(3, 2)], dt)


def consts_and_fills(x):
    big = tf.constant(np.arange(12, dtype=np.float32).reshape(3, 4))  # tensor_content
    splat = tf.constant(2.5, shape=[3, 4])                              # scalar splat
    row = tf.constant([1.0, -2.0, 3.0, -4.0])
    return (x * big + splat - row, tf.zeros_like(x), tf.ones_like(x),
            tf.identity(x), tf.stop_gradient(x) + 1.0, x, x)


def test_consts_fills_passthrough_and_repeated_outputs(compiler):
    run(compiler, consts_and_fills, [tf.TensorSpec([None, 4], F)], [r(3, 4)])
    run(compiler, consts_and_fills, [tf.TensorSpec([None, 4], F)], [r(1, 4)])


def int_ops(x, y):
    return tf.math.floordiv(x, y), tf.math.floormod(x, y), tf.raw_ops.Div(x=x, y=y)


def test_integer_division_by_zero(compiler):
    spec = tf.TensorSpec([None], I)
    exe, dt = compiler.executable(int_ops, [spec, spec])
    big = np.arange(1, 200001, dtype=np.int32)  # large enough for parallel_for
    exe([big, big], dt)
    y = big.copy()
    y[123456] = 0
    with pytest.raises(DiscError, match="Integer division by zero") as e:
        exe([big, y], dt)
    assert e.value.code == 3


def test_negative_int_pow(compiler):
    def ipow(x, y):
        return tf.pow(x, y)
    spec = tf.TensorSpec([None], I)
    exe, dt = compiler.executable(ipow, [spec, spec])
    with pytest.raises(DiscError, match="Integers to negative integer powers"):
        exe([np.array([2, 3], np.int32), np.array([1, -1], np.int32)], dt)


def scalars(a, b):
    return tf.maximum(a, b) * a, tf.sigmoid(a + b)


def test_rank0_and_mixed_rank(compiler):
    run(compiler, scalars, [tf.TensorSpec([], F), tf.TensorSpec([], F)],
        [np.float32(1.5), np.float32(-2.0)])
    for sa, sb in [((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((0, 3, 1), ())]:
        run(compiler, scalars, [tf.TensorSpec([None] * len(sa), F),
                                tf.TensorSpec([None] * len(sb), F)], [r(*sa), r(*sb)])


def chain(x, y, z):
    # Three different symbolic shapes: several kernels and temps.
    a = tf.exp(x) + y
    return tf.tanh(a * z) + a, a


def test_multi_kernel_chain_large(compiler):
    spec = tf.TensorSpec([None, None], F)
    exe, dt = compiler.executable(chain, [spec] * 3)
    for sx, sy, sz in [((300, 1), (1, 200), (300, 200)), ((1, 1), (5, 5), (1, 5))]:
        run(compiler, chain, [spec] * 3, [r(*sx), r(*sy), r(*sz)])
    assert exe.parallel_calls > 0


def softplus(x):
    return tf.nn.softplus(x)


def test_softplus_keeps_precision_for_negative_inputs(compiler):
    """Fuzz seed 202787: log(exp(x) + 1) lost ~4e-4 relative near x = -8;
    TF computes log1p(exp(x))."""
    x = np.linspace(-20, 20, 4001).astype(np.float32)
    got = run(compiler, softplus, [tf.TensorSpec([None], F)], [x])[0]
    want = tf.nn.softplus(x).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=0)   # relative, even where tiny
