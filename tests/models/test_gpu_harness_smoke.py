"""The GPU validation harness (benchmarks/gpu) as far as a machine without a
GPU allows: the tolerance arithmetic it judges kernels by, seeded inputs,
then the quick bundle build (make_cases.py --quick), the device-side
harness build (run.sh --build-only, g++ against the bundle's CUDA headers)
and run_cases.py --dry-run, which drives that harness's C API and every
library's host code through a driver stand-in
(tests/cpp_layer/fake_cuda_driver.cc) and checks the checks on stock TF's
own outputs.  Nothing here executes on a GPU."""
import csv
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.compiler.cuda_cases import NVCC

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
GPU = os.path.join(ROOT, "benchmarks", "gpu")


def _load(name: str):
    """benchmarks/gpu/<name>.py under a private module name (the scripts'
    own short names stay off this process's sys.path)."""
    spec = importlib.util.spec_from_file_location(f"gpu_harness_{name}",
                                                  os.path.join(GPU, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


common, reference = _load("common"), _load("reference")


def test_seeded_inputs_are_reproducible_and_checksummed():
    spec = {"dtype": "float16", "shape": [3, 5], "seed": 7, "offset": 1.0, "scale": 0.5}
    a, b = common.make_input(spec), common.make_input(spec)
    assert a.dtype == np.float16 and a.shape == (3, 5) and np.array_equal(a, b)
    assert np.all((a >= 0.5) & (a <= 1.5))
    assert common.checksum(a) == common.checksum(b)
    assert common.checksum(a) != common.checksum(a[::-1])  # order matters


def test_tolerance_kinds():
    ref = np.array([1.0, -2.0, 0.0])
    ulp = common.tolerance({"kind": "ulp", "dtype": "float32", "ulps": 4, "atol": 1e-7}, ref,
                           None, False)
    np.testing.assert_allclose(ulp, 4 * 2.0 ** -24 * np.abs(ref) + 1e-7)
    gemm = {"kind": "sum", "rel": 1e-5, "rel_tf32": 1e-3, "atol": 0.0}
    scale = np.array([10.0, 20.0, 30.0])
    np.testing.assert_allclose(common.tolerance(gemm, ref, scale, False), scale * 1e-5)
    np.testing.assert_allclose(common.tolerance(gemm, ref, scale, True), scale * 1e-3)
    mixed = {"kind": "mixed", "atol": 1e-4, "rtol": 1e-3, "atol_tf32": 1e-2, "rtol_tf32": 0.0}
    np.testing.assert_allclose(common.tolerance(mixed, ref, None, True), 1e-2)
    with pytest.raises(ValueError):
        common.tolerance(gemm, ref, None, False)


def test_check_counts_errors_and_nans():
    ref = np.array([1.0, np.nan, 3.0])
    ok, err, ratio = common.check(np.array([1.0, np.nan, 3.5]), ref, np.array([0.1, 0.1, 1.0]))
    assert ok and err == 0.5 and ratio == 0.5
    assert not common.check(np.array([1.0, 2.0, 3.0]), ref, 1.0)[0]  # NaN went missing
    assert not common.check(np.array([1.3, np.nan, 3.0]), ref, 0.1)[0]
    assert not common.check(np.zeros(2), ref, 1.0)[0]  # shape


def test_sum_scale_is_the_op_on_absolute_inputs():
    ops = reference.NumpyOps()
    x = np.array([[1.0, -2.0], [-3.0, 4.0]])
    np.testing.assert_allclose(reference.abs_scale("column_sum", ops, [x]), [4.0, 6.0])
    w, b = np.array([[1.0], [-1.0]]), np.array([-0.5])
    np.testing.assert_allclose(reference.abs_scale("dense", ops, [x, w, b]), [[3.5], [7.5]])
    assert reference.abs_scale("softmax", ops, [x]) is None


def _run(cmd: list, timeout: int = 300) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return proc.stdout


@pytest.mark.cuda_compile
@pytest.mark.skipif(NVCC is None, reason="no CUDA compiler (nvcc)")
def test_quick_bundle_harness_build_and_dry_run(tmp_path):
    bundle, out = str(tmp_path / "bundle"), str(tmp_path / "out")
    made = _run([sys.executable, os.path.join(GPU, "make_cases.py"), "--quick", "--out", bundle])
    manifest = common.read_manifest(bundle)
    assert set(manifest["cases"]) == {"loop_gelu_erf", "softmax", "layer_norm", "dense"}, made
    for case in manifest["cases"].values():
        assert os.path.isfile(os.path.join(bundle, case["builds"]["sm_90"]["library"]))
        assert case["builds"]["sm_90"]["kernels"]
        for entry in case["shapes"]:   # quick shapes are small: TF's outputs ship
            assert all(entry["expected"]) and all(entry["reference_f64"])
            assert entry["tf_error_ratio"] <= 1.0   # stock TF meets our tolerances
    assert {"include/cuda.h", "include/cublasLt.h"} <= set(manifest["cuda_headers"])

    _run(["env", "GPU_HARNESS_CXXFLAGS=-Werror -Wextra", "bash", os.path.join(GPU, "run.sh"),
          "--build-only", bundle, out])
    harness = os.path.join(out, "libdisc_harness.so")
    nm = _run(["nm", "-D", "--defined-only", harness])
    for fn in ("disc_harness_create", "disc_harness_load", "disc_harness_call"):
        assert fn in nm

    cuda = os.path.join(bundle, "cuda")
    fakes = {}
    for name in ("fake_cuda_driver", "fake_cublaslt"):
        fakes[name] = str(tmp_path / f"lib{name}.so")
        _run(["g++", "-std=c++17", "-shared", "-fPIC", "-I", os.path.join(cuda, "include"),
              "-I", os.path.join(cuda, "libcudacxx", "include"),
              os.path.join(ROOT, "tests", "cpp_layer", f"{name}.cc"), "-o", fakes[name]])
    fake, fake_lt = fakes["fake_cuda_driver"], fakes["fake_cublaslt"]
    # GEMMs included: the stand-in cuBLASLt takes its workspace from the
    # harness's scratch arena here, and from the allocation callback in the
    # run below (--arena-mib 0).
    dry = _run([sys.executable, os.path.join(GPU, "run_cases.py"), "--dry-run", "--bundle",
                bundle, "--harness", harness, "--driver", fake, "--cublaslt", fake_lt])
    assert dry.count(" ok\n") == 4 and "FAIL" not in dry, dry

    # run.sh and the GPU path on tests/models/fake_torch: every row, the
    # table and the CSV come out; outputs are garbage (nothing runs the
    # kernels), so every check fails -- as a row, not a crash.
    manifest["cases"]["softmax"]["timing_shapes"] = [
        {"inputs": manifest["cases"]["softmax"]["shapes"][0]["inputs"]}] * 2
    common.write_manifest(bundle, manifest)
    env = dict(os.environ, GPU_HARNESS_DRIVER=fake,
               GPU_HARNESS_ARGS=f"--copy-mib 4 --arena-mib 0 --cublaslt {fake_lt}",
               GPU_HARNESS_LIMIT_S="300", PYTHONPATH=os.pathsep.join(
                   [os.path.join(ROOT, "tests", "models", "fake_torch"),
                    os.environ.get("PYTHONPATH", "")]))
    env.pop("OUT", None)
    proc = subprocess.run(["bash", os.path.join(GPU, "run.sh"), bundle, out], capture_output=True,
                          text=True, timeout=300, cwd=ROOT, env=env)
    # run_cases.py's exit status (1: checks failed) comes through the pipe.
    assert proc.returncode == 1 and "Traceback" not in proc.stdout, proc.stdout + proc.stderr
    with open(os.path.join(out, "log.txt")) as f:
        assert f.read() == proc.stdout
    with open(os.path.join(out, "results.csv")) as f:
        rows = list(csv.DictReader(f))
    checks = [r for r in rows if r["check"] == "FAIL" and r["shape"]]
    assert {r["case"] for r in checks} >= {"dense", "dense tf32", "softmax", "layer_norm"}
    timed = {r["case"] for r in rows if r["check"] == "time"}
    assert {"d2d copy", "softmax", "layer_norm", "softmax compile total"} <= timed, rows
    assert all("max|err|" in r["notes"] for r in checks), checks  # numbers, not errors
    assert "device: fake device" in proc.stdout and "speedup_eager" in proc.stdout
