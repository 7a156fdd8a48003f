"""The kernel-only benchmark tools build and run (smoke tests: no speed is
asserted): benchmarks/gemm_bf16_cpu.py (the bf16 GEMM kernel's paths,
VDPBF16PS and AMX), benchmarks/bf16_vs_tf_bf16.py (ours beside TF's bf16
modes) and benchmarks/conv_kernel_ab.py (conv_direct.cc of a git
revision against the working tree's, checksums compared)."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def _run(*args: str) -> str:
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", args[0]), *args[1:]],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _cpu_flags() -> set:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


@pytest.mark.skipif("avx512_bf16" not in _cpu_flags(), reason="no AVX512_BF16 on this CPU")
def test_gemm_bf16_cpu_runs():
    out = _run("gemm_bf16_cpu.py", "--tokens", "128", "--seqs", "128", "--repeats", "1")
    assert re.search(r"^proj\s+1\s+128\s+768\s+768\b", out, re.M), out
    kernels = ["avx512_bf16"]
    if {"amx_tile", "amx_bf16"} <= _cpu_flags():
        kernels.insert(0, "amx")
        assert "amx speedup" in out, out
    for kernel in kernels:
        assert re.search(rf"^sum of times, {kernel}: [0-9.]+ ms$", out, re.M), out
    # Every row's err/bound column(s): the kernel stayed within its error bound.
    rows = [line.split() for line in out.splitlines()
            if re.match(r"^(proj|ffn_up|ffn_down|scores|context)\s", line)]
    assert len(rows) == 5, out
    for row in rows:
        per_kernel = row[-3 * len(kernels) - (1 if len(kernels) > 1 else 0):]
        err_over_bound = [float(per_kernel[3 * i + 2]) for i in range(len(kernels))]
        assert all(0 <= e < 1 for e in err_over_bound), row


@pytest.mark.parametrize("workload", ["B", "cnn"])
def test_bf16_vs_tf_bf16_quick_runs_every_mode(workload):
    """benchmarks/bf16_vs_tf_bf16.py --quick: each mode in its own process,
    ours never fell back, every mode's row printed (no speed asserted)."""
    out = _run("bf16_vs_tf_bf16.py", "--quick", "--repeats", "1", "--workload", workload)
    assert "FALLBACKS" not in out, out
    for mode in ("tf_fp32", "tf_amp_bf16", "tf_fpmath", "ours_fp32", "ours_bf16"):
        assert re.search(rf"^{mode}\s+[0-9.]+\s+[0-9.]+", out, re.M), out
    assert re.search(r"^ours_bf16 vs tf_amp_bf16: [0-9.]+x faster$", out, re.M), out


@pytest.mark.skipif(subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"],
                                   capture_output=True).returncode != 0,
                    reason="not a git checkout (side A is a git revision)")
def test_conv_kernel_ab_runs_and_checksums_agree():
    out = _run("conv_kernel_ab.py", "--rev", "HEAD", "--rounds", "1",
               "--layer", "dw 1 8 16 3 1", "--layer", "conv 1 6 8 16 3 2")
    lines = [line for line in out.splitlines() if "B/A" in line]
    assert len(lines) == 2 and all("checksums agree" in line for line in lines), out


def test_gemm_library_runs_and_agrees_with_mkl_where_installed():
    """benchmarks/gemm_library.py builds its driver and times ours (and
    oneMKL's sgemm where the mkl wheel is installed, whose product must
    agree with ours)."""
    out = _run("gemm_library.py", "--only", "bert proj T=32,4x4 2048", "--reps", "2", "--no-tf")
    rows = [line for line in out.splitlines() if re.match(r"^(bert|resnet) ", line)]
    assert len(rows) == 4, out  # two shapes, each printed as it runs and in the table
    assert re.search(r"^geomean ours/mkl", out, re.M) or "mkl: not installed" in out, out
    for diff in re.findall(r"\s(\d\.\de[-+]\d\d)\s", out):
        assert float(diff) < 1e-4, out
