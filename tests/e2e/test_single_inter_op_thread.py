"""A TF1 Session with one inter-op thread (its own pool) running a graph of
two clusters: the synchronous DiscLaunch kernel holds that thread while it
compiles (sync) or runs the fallback inline (async_compile), and neither
needs a second executor thread, so every run finishes and matches TF."""
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import cluster_stats, total


def _graph():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, None], name="x")
        a = tf.tanh(x) * 2.0 + 1.0
        b = tf.math.cumprod(a, axis=1)  # stays in TF: splits the clusters
        out = tf.identity(tf.sigmoid(b) * 3.0 - 1.0, name="out")
    return graph, x, out


def _reference(x):
    with np.errstate(over="ignore"):  # exp(-cumprod) of a large negative product: inf
        return 3.0 / (1.0 + np.exp(-np.cumprod(np.tanh(x) * 2.0 + 1.0, axis=1))) - 1.0


def _run_until_compiled(disc, deadline_s: float) -> list:
    """Runs the session in a thread (a deadlock leaves it stuck, not pytest)
    until both clusters ran compiled code; returns the failures seen."""
    graph, x, out = _graph()
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=1,
                                      intra_op_parallelism_threads=1,
                                      use_per_session_threads=True)
    errors: list = []

    def work():
        try:
            with tf.compat.v1.Session(graph=graph, config=config) as session:
                end = time.monotonic() + deadline_s
                i = 0
                while time.monotonic() < end:
                    xv = np.random.default_rng(i).standard_normal((2 + i % 3, 4 + i % 5))
                    xv = xv.astype(np.float32)
                    np.testing.assert_allclose(session.run(out, {x: xv}), _reference(xv),
                                               rtol=2e-5, atol=2e-5)
                    i += 1
                    clusters = cluster_stats(disc.stats())
                    if len(clusters) == 2 and all(c["cache_hits"] > 0 for c in clusters):
                        return
                errors.append(f"clusters never ran compiled: {disc.stats()}")
        except Exception as e:  # reported by the test thread
            errors.append(repr(e))

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(deadline_s + 60)
    if thread.is_alive():
        errors.append("deadlock: the session run never returned")
    return errors


@pytest.mark.parametrize("async_compile", [False, True])
def test_one_inter_op_thread_two_clusters(disc, async_compile):
    disc.set_options(async_compile=async_compile)
    try:
        assert _run_until_compiled(disc, deadline_s=180) == []
    finally:
        disc.set_options(async_compile=False)
    stats = disc.stats()
    assert total(stats, "compiles") == 2, stats
    if not async_compile:
        assert total(stats, "fallbacks") == 0, stats
