"""The self-guard (tf_disc/ops/self_guard.h) end to end: a cluster made slow
on purpose (its kernels built at -O0 through a compiler wrapper, tens of
times slower than TF's vectorized ops on any CPU) is routed to TF's own ops,
every answer still TF's, one compile; with the guard off no call runs in TF.
The routing policy itself is checked on made-up times in
tests/cpp_layer/test_self_guard.py.

Each test's function differs from the others' (a constant), so a kernel a
failed test left alive never reports into another test's cluster."""
import os
import stat

import numpy as np
import pytest
import tensorflow as tf


def _model(seed: int):
    w = tf.Variable(np.random.default_rng(seed).standard_normal((768, 768)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 768], tf.float32)])
    def layer(x):
        return tf.nn.relu(tf.matmul(x, w) + float(seed)) * 0.5

    return layer


def _unoptimized_cxx(tmp_path) -> str:
    """A compiler command that builds at -O0 (the last -O wins)."""
    path = tmp_path / "cxx_O0"
    path.write_text('#!/bin/sh\nexec c++ "$@" -O0\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _cluster(stats: dict) -> dict:
    """The one cluster that ran."""
    (cluster,) = [c for c in stats["clusters"].values() if c["runs"]]
    return cluster


def _elementwise_model(offset: float):
    """Elementwise math only: at -O0 every op is a scalar call chain, while
    TF's kernels are vectorized."""

    @tf.function(input_signature=[tf.TensorSpec([None, 768], tf.float32)])
    def layer(x):
        for _ in range(4):
            x = tf.tanh(x) * 1.5 + tf.exp(-x * x) - offset
        return x

    return layer


def test_slowed_cluster_routed_to_tf(disc, tmp_path):
    disc.set_options(self_guard=True, min_cluster_size=1, cxx=_unoptimized_cxx(tmp_path))
    try:
        layer = _elementwise_model(0.25)
        x = np.random.default_rng(1).standard_normal((512, 768)).astype(np.float32)
        want = layer.python_function(tf.constant(x)).numpy()
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
        # explain() names the choice for this function's cluster.
        explanation = disc.explain(layer)
        (choice,) = explanation.self_guard
        assert choice["route"] == "tf" and choice["bucket"] == slot["bucket"], choice
        assert disc.stats()["clusters"][choice["cluster"]]["runs"] == 60
        assert f"{choice['cluster']} key {slot['key']}" in str(explanation)
        assert "runs in TF (compiled" in str(explanation)
        assert explanation.to_dict()["self_guard"] == [choice]
    finally:
        disc.set_options(self_guard=False, min_cluster_size=2, cxx="c++")


def test_guard_off_never_runs_tf(disc, tmp_path):
    """The same slow build as above: with the guard off every call runs it."""
    # the fixture turns the guard off
    disc.set_options(min_cluster_size=1, cxx=_unoptimized_cxx(tmp_path))
    try:
        layer = _elementwise_model(0.5)
        x = np.random.default_rng(3).standard_normal((256, 768)).astype(np.float32)
        for _ in range(20):
            layer(x)
        cluster = _cluster(disc.stats())
        assert cluster["self_guard"] == {"tf_runs": 0, "slots": []}, cluster
        assert disc.explain(layer).self_guard == []
        assert "self-guard" not in str(disc.explain(layer))
        assert cluster["cache_hits"] == 19, cluster
    finally:
        disc.set_options(min_cluster_size=2, cxx="c++")


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
