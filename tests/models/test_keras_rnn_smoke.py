"""The control-flow benchmarks (keras_rnn.py, decode_while.py,
conditionals.py, tf1_while.py) at toy sizes print their tables (smoke tests: no speed is
asserted, but each model must be one DiscLaunch compiled once, with every
compute op inside it)."""
import os
import subprocess
import sys

from bench_tables import table_rows

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def test_keras_rnn_prints_table(tmp_path):
    env = dict(os.environ, DISC_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "keras_rnn.py"),
                           "--requests", "2", "--repeats", "1", "--units", "8", "--embed", "4"],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert out.startswith("CPU: "), out
    rows = table_rows(out, "Keras Embedding(")
    for model in ("lstm", "gru", "stacked"):
        row = rows[model]
        assert row["compiles"] == "1" and row["launches"] == "1", out
        assert row["coverage"] == "100.0%" and row["left_in_tf"] == "none", out
        assert float(row["steady_ours_ms"]) > 0 and float(row["max_abs_err"]) < 1e-3, out


def test_decode_while_prints_table(tmp_path):
    """benchmarks/decode_while.py at toy sizes: the decode loop is one compile
    and its tokens are stock TF's (the script asserts it)."""
    env = dict(os.environ, DISC_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "decode_while.py"),
                           "--steps", "4", "--hidden", "32", "--vocab", "64", "--layers", "1",
                           "--repeats", "1"], capture_output=True, text=True, env=env,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = table_rows(proc.stdout, "Greedy decode in one tf.while_loop")
    assert rows["ours"]["compiles"] == "1" and rows["tf"]["compiles"] == "0", proc.stdout


def test_conditionals_prints_table(tmp_path):
    """benchmarks/conditionals.py at toy sizes: tf.cond, tf.switch_case and a
    cond reading weights inside a while body, each one compile with every
    compute op inside it."""
    env = dict(os.environ, DISC_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "conditionals.py"),
                           "--requests", "3", "--repeats", "1", "--width", "16"],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = table_rows(proc.stdout, "conditionals, width 16")
    for model in ("gated", "switch", "loop"):
        row = rows[model]
        assert row["compiles"] == "1" and row["launches"] == "1", proc.stdout
        assert row["coverage"] == "100.0%" and row["left_in_tf"] == "none", proc.stdout
        assert row["fallbacks"] == "0" and float(row["max_abs_err"]) < 1e-3, proc.stdout


def test_tf1_while_prints_table(tmp_path):
    """benchmarks/tf1_while.py at toy sizes: the legacy loop is one compile
    and its results are stock TF's for every trip count (the script asserts
    it, and exits non-zero if a fallback ran)."""
    env = dict(os.environ, DISC_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "tf1_while.py"),
                           "--hidden", "8", "--batch", "2", "--steps", "0,1,5",
                           "--repeats", "1"], capture_output=True, text=True, env=env,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = table_rows(proc.stdout, "TF1 legacy tf.while_loop")
    assert rows["ours"]["compiles"] == "1" and rows["tf"]["compiles"] == "0", proc.stdout
