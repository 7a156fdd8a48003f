"""benchmarks/call_overhead.py prints both tables with the measured tf.roll
baseline (a smoke test: no speed is asserted, but every launch must run its
executable and the per-launch columns must be derived from the rolls)."""
import os
import subprocess
import sys

from bench_tables import table_rows

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def test_call_overhead_prints_per_launch_cost(tmp_path):
    env = dict(os.environ, DISC_CACHE_DIR=str(tmp_path / "cache"))
    clusters = 3
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "call_overhead.py"),
                           "--repeats", "2", "--clusters", str(clusters), "--shapes", "2x2", "8x16"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert set(table_rows(out, "one cluster)")) == {"2x2", "8x16"}, out
    many = table_rows(out, f"({clusters} clusters of 6 ops")
    assert set(many) == {"2x2", "8x16"}, out
    for row in many.values():
        rolls = float(row["rolls_us"])
        for mode, column in (("disc_us", "per_launch_us"), ("stock_tf_us", "per_6_tf_ops_us")):
            total = float(row[mode])
            # Printed to 4 significant digits: each cell is off by up to 5e-4 of itself.
            slack = 5e-4 * (abs(total) + abs(rolls)) / clusters + 1e-3 * abs(float(row[column]))
            assert abs(float(row[column]) - (total - rolls) / clusters) <= slack + 1e-6, out
    assert f"{clusters + 1} clusters, totals:" in out, out
    assert "'fallbacks': 0" in out, out
