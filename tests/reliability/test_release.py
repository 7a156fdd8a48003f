"""Issue #6: executables are released with their graphs.  Deleting a
tf.function (and its concrete functions) or closing a TF1 Session lets TF
destroy its DiscLaunch kernels, which dlcloses the libraries they used."""
import gc
import time

import numpy as np
import pytest
import tensorflow as tf



def random_f32(shape, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _loaded(disc) -> int:
    return disc.stats()["loaded_executables"]


def _chain(x, y, scale):
    # `scale` is a graph constant: each value is a distinct cluster function.
    return tf.tanh(x * y + scale) - tf.abs(x) * scale


def _reference(x, y, scale):
    return np.tanh(x * y + scale) - np.abs(x) * scale


def _make_function(scale):
    spec = tf.TensorSpec([None, None], tf.float32)
    return tf.function(lambda x, y: _chain(x, y, scale), input_signature=[spec, spec])


def _run_function(fn, scale, seed):
    for i, shape in enumerate([(2, 3), (5, 7), (1, 9)]):
        x, y = random_f32(shape, seed + i), random_f32(shape, seed + 100 + i)
        np.testing.assert_allclose(fn(x, y).numpy(), _reference(x, y, scale),
                                   rtol=2e-5, atol=1e-5)


def _collect():
    for _ in range(3):
        gc.collect()


def test_tf2_functions_release_their_executables(disc):
    base = _loaded(disc)
    fns = [_make_function(0.25 * (k + 1)) for k in range(3)]
    for k in range(3):
        _run_function(fns[k], 0.25 * (k + 1), seed=10 * k)
    assert _loaded(disc) == base + 3
    compiles = sum(c["compiles"] + c["disk_cache_hits"]
                   for c in disc.stats()["clusters"].values())
    assert compiles == 3  # one per function over three shapes
    del fns[0]
    _collect()
    assert _loaded(disc) == base + 2
    del fns[:]
    _collect()
    assert _loaded(disc) == base


def test_tf1_session_close_releases_its_executables(disc):
    base = _loaded(disc)
    sessions = []
    for k in range(2):
        graph = tf.Graph()
        with graph.as_default():
            x = tf.compat.v1.placeholder(tf.float32, [None, None])
            y = tf.compat.v1.placeholder(tf.float32, [None, None])
            out = tf.identity(_chain(x, y, 1.5 + k))
        session = tf.compat.v1.Session(graph=graph)
        xv, yv = random_f32((4, 6), k), random_f32((4, 6), 50 + k)
        np.testing.assert_allclose(session.run(out, {x: xv, y: yv}),
                                   _reference(xv, yv, 1.5 + k), rtol=2e-5, atol=1e-5)
        sessions.append(session)
    assert _loaded(disc) == base + 2
    sessions[0].close()
    assert _loaded(disc) == base + 1
    sessions[1].close()
    del sessions
    _collect()
    assert _loaded(disc) == base


def test_shared_cluster_stays_loaded_until_last_graph_dies(disc):
    """Two functions with the same cluster share one executable: deleting one
    keeps it for the other, which still runs it without recompiling."""
    base = _loaded(disc)
    first, second = _make_function(3.0), _make_function(3.0)
    _run_function(first, 3.0, seed=1)
    _run_function(second, 3.0, seed=2)
    assert _loaded(disc) == base + 1
    del first
    _collect()
    assert _loaded(disc) == base + 1
    _run_function(second, 3.0, seed=3)
    stats = list(disc.stats()["clusters"].values())
    assert sum(c["compiles"] + c["disk_cache_hits"] for c in stats) == 1
    del second
    _collect()
    assert _loaded(disc) == base


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    pytest.skip("no /proc/self/status")


def test_rss_flat_over_create_run_delete_cycles(disc):
    """Same cluster recreated 12 times: each cycle reloads the library from
    the disk cache and unloads it; RSS must not grow with the cycle count."""
    base = _loaded(disc)

    def cycle(seed):
        fn = _make_function(0.5)
        _run_function(fn, 0.5, seed)
        assert _loaded(disc) == base + 1
        del fn
        _collect()
        assert _loaded(disc) == base

    for i in range(4):  # warm up allocator and TF caches
        cycle(i)
    before = _rss_kib()
    for i in range(12):
        cycle(100 + i)
    grown = _rss_kib() - before
    print(f"RSS grew {grown} KiB over 12 cycles")
    assert grown < 8 * 1024, f"RSS grew {grown} KiB over 12 cycles"


def test_async_compile_finishing_after_its_graph_died(disc, tmp_path):
    """With async_compile the first call falls back and the compile runs on;
    when the function is deleted first, the late executable is discarded."""
    disc.enable(cache_dir=str(tmp_path / "cache"), async_compile=True)
    base = _loaded(disc)
    fn = _make_function(7.0)
    x, y = random_f32((3, 5), 0), random_f32((3, 5), 1)
    np.testing.assert_allclose(fn(x, y).numpy(), _reference(x, y, 7.0),
                               rtol=2e-5, atol=1e-5)
    del fn
    _collect()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        stats = list(disc.stats()["clusters"].values())
        if sum(c["compiles"] + c["disk_cache_hits"] for c in stats) == 1:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"compile never finished: {disc.stats()}")
    time.sleep(0.5)  # Finish runs right after the compile is recorded
    assert _loaded(disc) == base


def test_embedded_executables_released_with_their_model(disc, tmp_path):
    """A converted SavedModel's embedded libraries are loaded by its kernels
    and unloaded when the loaded model is deleted."""
    module = tf.Module()
    spec = tf.TensorSpec([None, None], tf.float32)
    module.f = tf.function(lambda x, y: {"out": _chain(x, y, 2.5)}, input_signature=[spec, spec])
    src, dst = str(tmp_path / "model"), str(tmp_path / "model_disc")
    tf.saved_model.save(module, src, signatures={"serving_default": module.f})
    del module
    summary = disc.convert_saved_model(src, dst, cache_dir=str(tmp_path / "cache"))
    assert summary.compiled >= 1
    _collect()
    base = _loaded(disc)
    disc.reset_stats()
    loaded = tf.saved_model.load(dst)
    fn = loaded.signatures["serving_default"]
    x, y = random_f32((4, 3), 7), random_f32((4, 3), 8)
    np.testing.assert_allclose(fn(x=tf.constant(x), y=tf.constant(y))["out"].numpy(),
                               _reference(x, y, 2.5), rtol=2e-5, atol=1e-5)
    assert _loaded(disc) == base + 1
    clusters = disc.stats()["clusters"].values()
    assert sum(c["compiles"] + c["disk_cache_hits"] for c in clusters) == 0
    del fn, loaded
    _collect()
    assert _loaded(disc) == base
