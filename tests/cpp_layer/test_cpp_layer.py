"""Runs each check of checks.py in its own process (the op library's state is
process-wide, and these checks install a toy compiler)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from checks import CHECKS  # noqa: E402


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_cpp_layer(name):
    proc = subprocess.run([sys.executable, os.path.join(HERE, "checks.py"), name],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
