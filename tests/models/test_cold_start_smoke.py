"""benchmarks/cold_start.py --quick: each mode's cold pass runs in its own
process and the table has every mode asked for, our mode with one compile
(a smoke test: no speed is asserted)."""
import os
import subprocess
import sys

from bench_tables import table_rows

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def test_cold_start_quick_prints_medians():
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "cold_start.py"),
                           "--quick", "--rounds", "2", "--modes", "tf,ours"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert out.count("round ") == 4, out
    rows = table_rows(out, "cold pass in a fresh process")
    assert set(rows) == {"tf", "ours"}, out
    assert rows["ours"]["compiles"] == "1" and rows["tf"]["compiles"] == "-", out
    for row in rows.values():
        assert float(row["min_s"]) <= float(row["cold_s"]) <= float(row["max_s"]), out
    assert rows["tf"]["cold/tf"] == "1.00x", out
