"""The inline-or-parallel_for decision of loop kernels: estimated cycles
(ops.cost, eighths of a cycle per element) decide, so small cheap kernels
run on the calling thread and the same element count of libm work is split."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler.codegen.cpu import kernel, ops

F = tf.float32
SPEC3 = [tf.TensorSpec([None, None, None], F), tf.TensorSpec([None], F)]


def _bias_gelu(x, b):
    return tf.nn.gelu(x + b, approximate=True)


def _bias_sin(x, b):
    return tf.sin(x + b) * 0.5


def _run(compiler, fn, shape, seed):
    exe, out_dt = compiler.executable(fn, SPEC3)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape[-1:]).astype(np.float32)
    before = exe.parallel_calls
    (got,) = exe([x, b], out_dt)
    np.testing.assert_allclose(got, fn(tf.constant(x), tf.constant(b)).numpy(),
                               rtol=1e-5, atol=1e-5)
    return exe.parallel_calls - before


@pytest.mark.parametrize("shape,split", [((2, 8, 768), False), ((1, 3, 5), False),
                                         ((4, 64, 768), True), ((3, 100, 777), True)])
def test_gelu_splits_only_big_tensors(compiler, shape, split):
    """bias+gelu_tanh: ~0.8 cycles per element; [2,8,768] is ~10k cycles."""
    calls = _run(compiler, _bias_gelu, shape, sum(shape))
    assert (calls > 0) == split


def test_libm_op_splits_where_cheap_op_does_not(compiler):
    """Same element count: sin (17 cycles per element) goes to the pool, the
    gelu kernel (under a cycle) runs inline."""
    shape = (2, 8, 768)
    assert _run(compiler, _bias_sin, shape, 1) > 0
    assert _run(compiler, _bias_gelu, shape, 2) == 0


def test_cost_units_are_eighths_of_a_cycle():
    """One parallel_for unit is CHUNK elements, so its cost in ops.cost units
    per element is its cost in cycles."""
    assert kernel.CHUNK == ops.UNITS_PER_CYCLE
    assert ops.cost("add") == 0 and ops.cost("tanh") < ops.UNITS_PER_CYCLE
    assert ops.cost("sine") > 10 * ops.UNITS_PER_CYCLE
