"""Shared fixtures: a clean blade_disc_tf state per test, and ways to look at
the graphs TensorFlow really ran (not our own counters)."""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Tests count runs, cache hits and compiles: synchronous compiles and no
# self-guard (which may run some calls in TF, by timing) unless a test turns
# them on, the product defaults being async and guarded; child processes
# inherit this.
os.environ.setdefault("DISC_ASYNC_COMPILE", "0")
os.environ.setdefault("DISC_SELF_GUARD", "0")

import pytest  # noqa: E402


@pytest.fixture
def disc(tmp_path):
    """blade_disc_tf enabled with an empty cache directory, zeroed stats and no
    in-memory executables, so each test counts its own compiles."""
    import blade_disc_tf as disc

    disc.enable(cache_dir=str(tmp_path / "cache"), min_cluster_size=2, cxx="c++",
                forbid_compile=False, async_compile=False, dump_dir=None, target_isa="",
                self_guard=False)
    disc.clear_executable_cache()
    disc.reset_stats()
    yield disc
    disc.enable(cache_dir=str(tmp_path / "cache"))


def pytest_configure(config):
    # `slow`: minutes, not seconds (tests/test_wheel.py builds the op library
    # from scratch); still part of the default run, `-m "not slow"` skips them.
    config.addinivalue_line("markers", "slow: takes minutes (runs by default)")
