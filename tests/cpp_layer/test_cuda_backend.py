"""The TF-free CUDA backend (tf_disc/runtime/cuda/cuda_backend.h) on a
machine without a GPU: cuda_backend_check.cc, compiled here against the
backend's sources and the CUDA headers of the TF wheel, run against
fake_cuda_driver.cc and fake_cublaslt.cc built as stand-ins for libcuda
and libcublasLt."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, ROOT)

from tf_disc import build_ops  # noqa: E402

CUDA_SOURCES = ["cuda_driver.cc", "cublaslt_gemm.cc", "cuda_backend.cc"]


def _cuda_includes():
    dirs = build_ops.cuda_include_dirs()
    if not dirs or not os.path.isfile(os.path.join(dirs[0], "cublasLt.h")):
        pytest.skip("the TF wheel ships no CUDA headers")
    return [flag for d in dirs for flag in ("-I", d)]


def test_cuda_backend(tmp_path):
    includes = _cuda_includes()
    flags = ["c++", "-std=c++17", "-O1", "-Wall", "-Werror", "-I", ROOT] + includes
    fakes = []
    for source in ("fake_cuda_driver.cc", "fake_cublaslt.cc"):
        fakes.append(str(tmp_path / ("lib" + source.replace(".cc", ".so"))))
        subprocess.run(flags + ["-shared", "-fPIC", os.path.join(HERE, source), "-o", fakes[-1]],
                       check=True, capture_output=True, text=True)
    exe = str(tmp_path / "cuda_backend_check")
    sources = [os.path.join(ROOT, "tf_disc", "runtime", "cuda", s) for s in CUDA_SOURCES]
    subprocess.run(flags + [os.path.join(HERE, "cuda_backend_check.cc")] + sources +
                   ["-ldl", "-o", exe], check=True, capture_output=True, text=True)
    proc = subprocess.run([exe] + fakes, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout + proc.stderr
