"""benchmarks/bert_dynamic.py --quick runs every mode and prints its tables
(a smoke test: no speed is asserted, but our mode must really run
DiscLaunch with one compile, and the stock modes must not)."""
import os
import subprocess
import sys

from bench_tables import table_rows

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def test_bert_dynamic_quick_prints_tables(tmp_path):
    env = dict(os.environ, DISC_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bert_dynamic.py"),
                           "--quick", "--workload", "A"], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    rows = table_rows(out, "Workload A (")
    for mode in ("tf", "tf1_session", "xla", "ours", "ours_async", "gemm_floor(ours)",
                 "gemm_floor(tf)"):
        assert mode in rows, out
    assert "onnxruntime" in rows or "ONNX Runtime mode skipped" in out, out
    for mode in ("tf", "tf1_session", "xla", "gemm_floor(tf)"):
        assert rows[mode]["DiscLaunch"] == "0", out
    for mode in ("ours", "ours_async", "gemm_floor(ours)"):
        assert int(rows[mode]["DiscLaunch"]) >= 1 and rows[mode]["compiles"] == "1", out
        assert float(rows[mode]["steady_s"]) > 0, out
    assert "FALLBACKS" not in out, out
    ratios = table_rows(out, "Workload A: time ratios")["ours"]
    assert "steady/tf" in ratios and "steady/gemm_floor(tf)" in ratios, out
