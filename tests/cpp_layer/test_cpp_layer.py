"""Runs each check of checks.py in its own process (the op library's state is
process-wide, and these checks install a toy compiler)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from checks import CHECKS  # noqa: E402

CHECK_TIMEOUT_S = 300


@pytest.fixture(scope="module", autouse=True)
def built_library():
    """Builds a stale library once, here, with no time limit: a rebuild (a
    minute or more on a loaded machine) inside the first check's timeout
    looked like that check failing."""
    from checks import build_ops
    return build_ops.build(verbose=False)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_cpp_layer(name):
    try:
        proc = subprocess.run([sys.executable, os.path.join(HERE, "checks.py"), name],
                              capture_output=True, text=True, timeout=CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"check {name} still running after {CHECK_TIMEOUT_S} s (the library was "
                    f"built before it; a hang, or a badly overloaded machine):\n"
                    f"{(e.stdout or b'')[-2000:]!r}\n{(e.stderr or b'')[-4000:]!r}")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
