"""16 threads on one TF2 function and one TF1 session with mixed shapes:
correct results, one compile per key, no deadlock (also with one inter-op
thread, TF2 and a TF1 session's own pool); RSS stays flat (5%) over 10,000
mixed-shape calls with two executables, temps and an error path."""
import threading

import numpy as np
import pytest
import tensorflow as tf

from helpers import counter, reasons, run_python

THREADS = 16


def _shape(rank, rng):
    return tuple(int(d) for d in rng.integers(0, 9, size=rank))


def _hammer(call, expect, ranks, per_thread=12):
    errors = []
    barrier = threading.Barrier(THREADS)

    def worker(i):
        rng = np.random.default_rng(i)
        try:
            barrier.wait()
            for j in range(per_thread):
                shape = _shape(ranks[(i + j) % len(ranks)], rng)
                x = rng.standard_normal(shape).astype(np.float32)
                np.testing.assert_allclose(call(x), expect(x), rtol=1e-5, atol=1e-6)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "deadlock: threads still running"
    assert not errors, errors[:3]


def _expect(x):
    return np.tanh(x) * x + np.abs(x)


def test_tf2_function_16_threads(disc):
    f = tf.function(lambda x: tf.tanh(x) * x + tf.abs(x),
                    input_signature=[tf.TensorSpec(None, tf.float32)])  # any rank
    _hammer(lambda x: f(x).numpy(), _expect, ranks=(1, 2, 3))
    stats = disc.stats()
    keys = [k for c in stats["clusters"].values() for k in c["keys"]]
    assert counter(stats, "compiles") == len(keys) == 3, stats
    assert counter(stats, "fallbacks") == 0, reasons(stats)


def test_tf1_session_16_threads(disc):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=None)
        y = tf.tanh(x) * x + tf.abs(x)
    with tf.compat.v1.Session(graph=g, config=disc.session_config(min_cluster_size=2)) as sess:
        _hammer(lambda a: sess.run(y, {x: a}), _expect, ranks=(2, 1))
    stats = disc.stats()
    assert counter(stats, "compiles") == 2, stats
    assert counter(stats, "fallbacks") == 0, reasons(stats)


_SUBPROCESS = """
import json, threading
import numpy as np
import tensorflow as tf
{setup}
import blade_disc_tf as disc
disc.enable(cache_dir={cache!r}, min_cluster_size=1)
{build}
errors = []
def worker(i):
    rng = np.random.default_rng(i)
    try:
        for j in range(8):
            a = rng.standard_normal((i % 4,) * (1 + (i + j) % {ranks})).astype(np.float32)
            np.testing.assert_allclose(call(a), np.tanh(a) * a + np.abs(a), rtol=1e-5, atol=1e-6)
    except Exception as e:
        errors.append(e)
ts = [threading.Thread(target=worker, args=(i,)) for i in range({threads})]
[t.start() for t in ts]
[t.join() for t in ts]
assert not errors, errors
print(json.dumps(disc.stats()["clusters"]))
"""


def _threads_in_subprocess(tmp_path, setup: str, build: str, ranks: int) -> dict:
    """16 threads calling `call(a)` (defined by `build`) in a fresh process;
    returns the cluster stats."""
    import json
    proc = run_python(_SUBPROCESS.format(setup=setup, build=build, ranks=ranks,
                                         threads=THREADS, cache=str(tmp_path / "cache")),
                      timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    clusters = json.loads(proc.stdout.strip().splitlines()[-1])
    assert clusters, proc.stdout
    for c in clusters.values():   # one compile per (cluster, rank) key, no fallback
        assert c["compiles"] == len(c["keys"]) == ranks and c["fallbacks"] == 0, clusters
    return clusters


def test_one_inter_op_thread_no_deadlock(tmp_path):
    _threads_in_subprocess(tmp_path, setup="""
tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.threading.set_intra_op_parallelism_threads(1)""", build="""
f = tf.function(lambda x: tf.tanh(x) * x + tf.abs(x),
                input_signature=[tf.TensorSpec(None, tf.float32)])
call = lambda a: f(a).numpy()""", ranks=2)


def test_tf1_session_one_inter_op_thread_no_deadlock(tmp_path):
    # The session's own pool has one thread: the compile must not need it.
    _threads_in_subprocess(tmp_path, setup="tf.compat.v1.disable_eager_execution()", build="""
x = tf.compat.v1.placeholder(tf.float32, shape=None)
y = tf.tanh(x) * x + tf.abs(x)
config = disc.session_config(min_cluster_size=1)
config.inter_op_parallelism_threads = 1
config.intra_op_parallelism_threads = 1
config.use_per_session_threads = True
sess = tf.compat.v1.Session(config=config)
call = lambda a: sess.run(y, {x: a})""", ranks=3)


def _rss_kb():
    with open("/proc/self/statm") as f:
        import os
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


@pytest.mark.parametrize("calls", [10000])
def test_rss_flat_over_mixed_shape_calls(disc, calls):
    # Two rank signatures (two executables), sizes 0..40, a temp buffer per
    # call (the reduction's input is materialized) and an error path.
    f = tf.function(lambda x, y: tf.reduce_sum(tf.nn.relu(x) * y, axis=-1) + tf.exp(-tf.abs(
        tf.reduce_max(y, axis=-1))), input_signature=[tf.TensorSpec(None, tf.float32)] * 2)
    rng = np.random.default_rng(0)
    inputs = []
    for k in range(64):
        shape = tuple(int(d) for d in rng.integers(0, 40, size=2 + k % 2))
        inputs.append((rng.standard_normal(shape).astype(np.float32),
                       rng.standard_normal((1,) * (len(shape) - 1) + shape[-1:]).astype(
                           np.float32)))
    bad = (np.ones((2, 3), np.float32), np.ones((1, 4), np.float32))

    def run(i):
        if i % 500 == 0:
            with pytest.raises(tf.errors.InvalidArgumentError):
                f(*bad)
        else:
            f(*inputs[i % len(inputs)])

    for i in range(500):                       # warm-up
        run(i)
    before = _rss_kb()
    for i in range(calls):
        run(i)
    after = _rss_kb()
    print(f"RSS before {before} kB, after {after} kB over {calls} calls")
    assert after <= before * 1.05, (before, after)
    assert counter(disc.stats(), "compiles") == 2, disc.stats()
    assert counter(disc.stats(), "fallbacks") == 0, reasons(disc.stats())
