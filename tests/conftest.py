"""Shared fixtures: a clean blade_disc_tf state per test, and ways to look at
the graphs TensorFlow really ran (not our own counters)."""
from __future__ import annotations

import os
import platform

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Tests count runs, cache hits and compiles: synchronous compiles and no
# self-guard (which may run some calls in TF, by timing) unless a test turns
# them on, the product defaults being async and guarded; child processes
# inherit this.
os.environ.setdefault("DISC_ASYNC_COMPILE", "0")
os.environ.setdefault("DISC_SELF_GUARD", "0")
# The reference is TF with its oneDNN kernels on every x86 CPU, as TF runs by
# default where the CPU has AVX512_VNNI, AVX512_BF16 or AMX.  On other CPUs
# (AVX2-only ones) TF's default Eigen kernels raise for graphs we compile
# (dilated Conv2D backprops, depthwise convolutions with dilation or unequal
# strides) and answer some edge cases otherwise (QuantizeV2's HALF_TO_EVEN
# ranges, FusedBatchNormV3's reserve space shape): the expected values must
# not depend on the CPU model.
if platform.machine() in ("x86_64", "AMD64"):
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

import pytest  # noqa: E402


@pytest.fixture
def disc(tmp_path):
    """blade_disc_tf enabled with an empty cache directory, zeroed stats and no
    in-memory executables, so each test counts its own compiles."""
    import blade_disc_tf as disc

    disc.enable(cache_dir=str(tmp_path / "cache"), min_cluster_size=2, cxx="c++",
                forbid_compile=False, async_compile=False, dump_dir=None, target_isa="",
                self_guard=False, device="cpu")
    disc.clear_executable_cache()
    disc.reset_stats()
    yield disc
    disc.enable(cache_dir=str(tmp_path / "cache"))


def pytest_configure(config):
    # `slow`: minutes, not seconds (tests/test_wheel.py builds the op library
    # from scratch); still part of the default run, `-m "not slow"` skips them.
    config.addinivalue_line("markers", "slow: takes minutes (runs by default)")
    # `cuda_compile`: builds generated CUDA code with nvcc (skipped without one).
    config.addinivalue_line("markers", "cuda_compile: compiles CUDA code with nvcc "
                            "(skipped where no nvcc is installed)")
