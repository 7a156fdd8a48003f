"""benchmarks/cold_start.py --quick: each mode's cold pass runs in its own
process and the table has every mode asked for, our mode with one compile
(a smoke test: no speed is asserted); how calls to the steady state are
counted."""
import os
import subprocess
import sys

import pytest
from bench_tables import table_rows

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def test_cold_start_quick_prints_medians():
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "cold_start.py"),
                           "--quick", "--rounds", "2", "--modes", "tf,ours"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert out.count("round ") == 4, out
    rows = table_rows(out, "bert: cold pass over 6 shapes in a fresh process")
    assert set(rows) == {"tf", "ours"}, out
    assert rows["ours"]["compiles"] == "1" and rows["tf"]["compiles"] == "-", out
    assert float(rows["ours"]["compile_s"]) > 0 and rows["tf"]["compile_s"] == "-", out
    assert 0 <= float(rows["ours"]["to_steady"]) <= 4 * 6, out
    for row in rows.values():
        assert float(row["min_s"]) <= float(row["cold_s"]) <= float(row["max_s"]), out
    assert rows["tf"]["cold/tf"] == "1.00x", out


def test_calls_to_steady_is_the_last_slow_call():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from models.cold_start_models import calls_to_steady

    steady = [1.0, 2.0]
    passes = [[9.0, 2.0], [1.0, 5.0], [1.1, 2.0], [1.0, 2.1]]
    assert calls_to_steady([t for p in passes for t in p], 2) == 4   # 5.0 > 1.5 x 2
    assert calls_to_steady(steady * 3, 2) == 0
    assert calls_to_steady([1.6] + steady[1:] + steady * 2, 2) == 1
    with pytest.raises(ValueError):
        calls_to_steady(steady * 2, 2)
