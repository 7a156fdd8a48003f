"""benchmarks/bert_profile.py runs one mode to its "ready" line and at least
one timed pass (a smoke test: no speed is asserted)."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


@pytest.mark.parametrize("mode", ["ours", "floor"])
def test_bert_profile_runs_one_mode(tmp_path, mode):
    env = dict(os.environ, DISC_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bert_profile.py"),
                           "--mode", mode, "--layers", "1", "--seconds", "0"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert "ready" in lines, proc.stdout
    assert re.search(rf"^{mode}: [0-9.]+ ms per pass of 16 requests \(1 passes\)$",
                     lines[-1]), proc.stdout
