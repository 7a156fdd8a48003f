"""The self-guard (tf_disc/ops/self_guard.h) end to end: a cluster made slow
on purpose (DISC_KERNEL_THREADS=1: its GEMM on one thread while TF's MatMul
uses the whole intra-op pool) is routed to TF's own ops, every answer still
TF's, one compile; with the guard off no call runs in TF.  The routing policy
itself is checked on made-up times in tests/cpp_layer/test_self_guard.py."""
import os

import numpy as np
import pytest
import tensorflow as tf

pytestmark = pytest.mark.skipif((os.cpu_count() or 1) < 2,
                                reason="one core: TF's MatMul is single-threaded too")


def _model(seed: int):
    w = tf.Variable(np.random.default_rng(seed).standard_normal((768, 768)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 768], tf.float32)])
    def layer(x):
        return tf.nn.relu(tf.matmul(x, w) + 1.0) * 0.5

    return layer


def _cluster(stats: dict) -> dict:
    """The one cluster that ran."""
    (cluster,) = [c for c in stats["clusters"].values() if c["runs"]]
    return cluster


def test_slowed_cluster_routed_to_tf(disc):
    disc.set_options(self_guard=True, min_cluster_size=1)
    try:
        layer = _model(0)
        x = np.random.default_rng(1).standard_normal((1024, 768)).astype(np.float32)
        want = layer.python_function(tf.constant(x)).numpy()
        with disc.runtime_switches(DISC_KERNEL_THREADS="1"):
            for _ in range(60):
                np.testing.assert_allclose(layer(x).numpy(), want, rtol=1e-4, atol=1e-4)
        cluster = _cluster(disc.stats())
        assert cluster["compiles"] == 1, cluster
        (slot,) = cluster["self_guard"]["slots"]
        assert slot["route"] == "tf", slot
        assert slot["tf_ms"] < slot["executable_ms"], slot
        # Sampling ran some calls in TF, routing most of the rest.
        assert cluster["self_guard"]["tf_runs"] >= 40, cluster
        assert cluster["runs"] == 60 and cluster["fallbacks"] == 0, cluster
    finally:
        disc.set_options(self_guard=False, min_cluster_size=2)


def test_guard_off_never_runs_tf(disc):
    disc.set_options(min_cluster_size=1)  # the fixture turns the guard off
    try:
        layer = _model(2)
        x = np.random.default_rng(3).standard_normal((256, 768)).astype(np.float32)
        with disc.runtime_switches(DISC_KERNEL_THREADS="1"):
            for _ in range(20):
                layer(x)
        cluster = _cluster(disc.stats())
        assert cluster["self_guard"] == {"tf_runs": 0, "slots": []}, cluster
        assert cluster["cache_hits"] == 19, cluster
    finally:
        disc.set_options(min_cluster_size=2)


def test_guard_sizes_are_buckets(disc):
    """Calls of very different sizes are judged apart: one slot per size
    bucket (bit length of the activation element count), shapes dynamic."""
    disc.set_options(self_guard=True, min_cluster_size=1)
    try:
        layer = _model(4)
        rng = np.random.default_rng(5)
        for rows in (1, 4, 64, 1024) * 10:
            x = rng.standard_normal((rows, 768)).astype(np.float32)
            np.testing.assert_allclose(layer(x).numpy(), layer.python_function(tf.constant(x)),
                                       rtol=1e-4, atol=1e-4)
        cluster = _cluster(disc.stats())
        assert cluster["compiles"] == 1, cluster
        buckets = sorted(s["bucket"] for s in cluster["self_guard"]["slots"])
        assert buckets == [10, 12, 16, 20], cluster["self_guard"]
    finally:
        disc.set_options(self_guard=False, min_cluster_size=2)
