"""Dim expressions stay small through residual chains: a VALID window's
max(0, size) folds to the size, so an Add of a block's input and output
sees one spelling (bcast of two spellings nests the previous dim twice and
doubled the string per block: 12 blocks gave 207k characters)."""
import time

import pytest
import tensorflow as tf

from blade_disc_tf.compiler.frontend import lower_graph, parse_function_def
from blade_disc_tf.compiler.shapes.symbolic import dim_max, known_nonneg


@pytest.mark.parametrize("d,want", [
    ("s0", True), ("0", True), ("-1", False), ("sub(s0,s1)", False),
    ("add(s0,-1)", False), ("max(0,sub(s0,s1))", True), ("floordiv(add(s1,1),2)", True),
    ("mul(s0,s1)", True), ("bcast(s0,max(0,add(s1,-2)))", True),
    ("min(s0,add(s1,-3))", False), ("ifzero(s0,s1,2)", True)])
def test_known_nonneg(d, want):
    assert known_nonneg(d) is want


def test_dim_max_folds_only_nonneg():
    assert dim_max("0", "floordiv(add(s1,1),2)") == "floordiv(add(s1,1),2)"
    assert dim_max("add(s1,-2)", "0") == "max(0,add(s1,-2))"
    assert dim_max("0", "max(0,add(s1,-2))") == "max(0,add(s1,-2))"


def _residual_chain(blocks: int):
    """blocks x (1x1 VALID conv, stride 2 every 5th; 1x1 VALID conv; relu;
    residual Add) over [?, ?, ?, 8], filters as function inputs."""
    specs = [tf.TensorSpec([None, None, None, 8])]
    specs += [tf.TensorSpec([None, None, 8, 8])] * (2 * blocks)

    @tf.function(input_signature=specs)
    def f(x, *ws):
        for i in range(blocks):
            x = tf.nn.conv2d(x, ws[2 * i], 2 if i % 5 == 0 else 1, "VALID")
            x = x + tf.nn.relu(tf.nn.conv2d(x, ws[2 * i + 1], 1, "VALID"))
        return x

    return parse_function_def(f.get_concrete_function().function_def.SerializeToString())


def test_thirty_block_residual_chain_lowers_fast_with_static_kernels():
    blocks = 30
    g = _residual_chain(blocks)
    g.static_dims = [None] + [[1, 1, 8, 8]] * (2 * blocks)   # as Grappler records them
    t0 = time.perf_counter()
    func = lower_graph(g, [{"dtype": 1, "rank": 4, "value": None}] * (2 * blocks + 1))
    seconds = time.perf_counter() - t0
    shape = func.rets[0].shape
    assert seconds < 5, seconds
    assert shape[0] == "s0" and shape[3] == "8", shape
    # six stride-2 convs: ceil(h / 2^6) as six nested floordivs, no bcast
    assert max(len(d) for d in shape) < 200 and "bcast" not in "".join(shape), shape
    assert shape[1].count("floordiv") == 6, shape
