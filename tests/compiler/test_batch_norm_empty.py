"""FusedBatchNorm(V2/V3) inference on an empty x gives TF's outputs: NaN
batch mean/variance and zero reserve spaces (non-empty x: the given
statistics), decided at run time from the symbolic element count, with one
compile for empty and non-empty shapes alike; and with static dims."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import cluster_stats, total

# reserve_space_1/2: TF's inference kernel allocates them and never writes
# them (fused_batch_norm_op.cc), so they are compared with their documented
# values, the given mean and variance (0 for an empty x), never with TF's.
RESERVE = (3, 4)
SHAPES = [(2, 3, 3, 4), (0, 3, 3, 4), (1, 5, 2, 4), (2, 0, 3, 4), (1, 1, 1, 4), (3, 2, 0, 4)]


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _bn(op):
    def fn(x, s, o, m, v):
        out = getattr(tf.raw_ops, op)(x=x, scale=s, offset=o, mean=m, variance=v, epsilon=1e-3,
                                      is_training=False)
        return [t * 1.0 for t in out]   # multiply: each output is computed in the cluster
    return fn


def _cases(shapes):
    return [[_rand(s, i)] + [_rand((4,), 10 + j) for j in range(3)] + [np.abs(_rand((4,), 20)) + .5]
            for i, s in enumerate(shapes)]


def _check(disc, fn, specs, cases):
    disc.enable(min_cluster_size=1)
    compiled = tf.function(fn, input_signature=specs)
    for inputs in cases:
        got, want = compiled(*inputs), fn(*[tf.constant(x) for x in inputs])
        for k, (g, w) in enumerate(zip(got, want)):
            assert g.shape == w.shape, (k, g.shape, w.shape)
            if k in RESERVE:  # TF's CPU kernel leaves them unwritten: its documented values
                w = np.zeros_like(inputs[k]) if inputs[0].size == 0 else inputs[k]
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5,
                                       err_msg=f"output {k}, x {inputs[0].shape}")
    st = disc.stats()
    assert total(st, "fallbacks") == 0, st
    assert [c["compiles"] for c in cluster_stats(st)] == [1], st


@pytest.mark.parametrize("op", ["FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3"])
def test_dynamic_shapes_with_empty_inputs(disc, op):
    specs = [tf.TensorSpec([None] * 4, tf.float32)] + [tf.TensorSpec([None], tf.float32)] * 4
    _check(disc, _bn(op), specs, _cases(SHAPES))


@pytest.mark.parametrize("shape", [(0, 3, 3, 4), (2, 3, 3, 4)])
def test_static_shape(disc, shape):
    specs = [tf.TensorSpec(shape, tf.float32)] + [tf.TensorSpec([4], tf.float32)] * 4
    _check(disc, _bn("FusedBatchNormV3"), specs, _cases([shape]))
