"""Keras models whose graphs hold function calls TF does not inline (Keras 3
runs grouped convolutions through tf.function(jit_compile=True)): a
ConvNeXt-style model (the structure of keras.applications.ConvNeXtTiny at
test size; benchmarks/keras_calls.py measures the full model) and a
MultiHeadAttention encoder run as one cluster with no op (call) left in TF, one
compile over several image sizes and batches, equal to stock TF within
float32 rounding; plus benchmarks/keras_calls.py --quick as a smoke test."""
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from bench_tables import table_rows
from graph_inspection import total

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
from models import coverage, keras_calls  # noqa: E402

SHAPES = [(2, 40, 56), (1, 33, 33), (3, 64, 48), (1, 17, 95)]


@pytest.mark.parametrize("name,calls", [("convnext_like", 3), ("vit_like", 0)])
def test_one_cluster_no_call_between(disc, name, calls):
    make = keras_calls.build(name)
    disc.disable()
    stock = make()
    graphs = coverage.executed_graphs(lambda: stock(tf.zeros([1, 32, 32, 3])))
    assert keras_calls.launches_and_calls(graphs) == (0, calls)
    disc.enable()
    ours = make()
    cov = coverage.measure(lambda: ours(tf.zeros([1, 32, 32, 3])))
    # Every compute op (calls included) TF runs is inside the one DiscLaunch.
    assert len(cov.launches) == 1 and not cov.outside and cov.inside, cov.summary()
    rng = np.random.default_rng(0)
    for n, h, w in SHAPES:
        x = tf.constant(rng.uniform(-1, 1, (n, h, w, 3)).astype(np.float32))
        want, got = stock(x).numpy(), ours(x).numpy()
        assert got.shape == want.shape
        assert np.abs(got - want).max() <= 1e-4 * max(np.abs(want).max(), 1.0)
    stats = disc.stats()
    assert total(stats, "compiles") == 1 and total(stats, "fallbacks") == 0, stats


def test_keras_calls_benchmark_quick():
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "keras_calls.py"),
                           "--quick", "--repeats", "1"], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert out.startswith("CPU: ") and "flags:" in out.splitlines()[0], out
    rows = table_rows(out, "Keras models with function calls")
    assert set(rows) == {"convnext_like:tf", "convnext_like:ours", "convnext_like:ours_async"}
    assert rows["convnext_like:tf"]["calls"] == "3" and rows["convnext_like:tf"]["clusters"] == "0"
    for mode in ("ours", "ours_async"):
        row = rows[f"convnext_like:{mode}"]
        assert (row["clusters"], row["calls"], row["compiles"]) == ("1", "0", "1"), out
        assert row["fallbacks"] == "0" and float(row["steady_s"]) > 0, out
    assert "FALLBACKS" not in out, out
