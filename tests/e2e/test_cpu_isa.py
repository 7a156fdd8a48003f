"""ISA tiers (runtime/cpu/cpu_isa.h, compiler/build/isa.py): under the
DISC_MAX_CPU_ISA cap the op library loads that tier's kernel library and
compiles generated code for that tier only, and the results still equal
TF's; the target_isa option lowers generated code alone.  Each cap runs in
a fresh process (the cap is read once per process)."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from blade_disc_tf import _library
from blade_disc_tf.compiler.build import isa

SCRIPT = r'''
import glob, json, sys
import numpy as np
import tensorflow as tf
import blade_disc_tf as disc

cache, options = sys.argv[1], json.loads(sys.argv[2])
disc.enable(cache_dir=cache, min_cluster_size=1, **options)

@tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
def dense(a, b):
    return tf.nn.relu(tf.matmul(a, b) + 1.0)

@tf.function(input_signature=[tf.TensorSpec([None, None, None, None], tf.float32),
                              tf.TensorSpec([3, 3, None, None], tf.float32)])
def conv(x, w):
    return tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME")) * 0.5

rng = np.random.default_rng(0)
worst = 0.0
for m, k, n in [(5, 7, 9), (64, 128, 96), (300, 256, 200)]:
    a, b = rng.standard_normal((m, k), np.float32), rng.standard_normal((k, n), np.float32)
    want = np.maximum(a.astype(np.float64) @ b + 1.0, 0.0)
    worst = max(worst, float(np.max(np.abs(dense(a, b).numpy() - want)) / np.max(np.abs(want))))
for hw, cin, cout in [(8, 3, 4), (17, 16, 32)]:
    x = rng.standard_normal((2, hw, hw, cin), np.float32)
    w = rng.standard_normal((3, 3, cin, cout), np.float32)
    want = (tf.nn.relu(tf.nn.conv2d(x, w, 1, "SAME")) * 0.5).numpy()  # eager: stock TF
    worst = max(worst, float(np.max(np.abs(conv(x, w).numpy() - want)) / np.max(np.abs(want))))
stats = disc.stats()
print(json.dumps({"worst": worst, "cpu": stats["cpu"],
                  "clusters": {k: [v["compiles"], v["fallbacks"]]
                               for k, v in stats["clusters"].items()},
                  "libraries": glob.glob(cache + "/**/*.so", recursive=True)}))
'''


def _run(tmp_path, cap: str = "", **options) -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("DISC_MAX_CPU_ISA", None)
    if cap:
        env["DISC_MAX_CPU_ISA"] = cap
    cache = tmp_path / ("cache_" + (cap or "host"))
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(cache), json.dumps(options)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _has_zmm(path: str) -> bool:
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True,
                         text=True, check=True).stdout
    return "%zmm" in out


def _kernel_library(tier: str) -> str:
    return os.path.join(os.path.dirname(_library.library_path()),
                        f"libblade_disc_tf_kernels_{tier}.so")


def test_host_tier_runs_its_kernels(tmp_path):
    r = _run(tmp_path)
    assert r["cpu"]["detected"] == r["cpu"]["selected"] == isa.host_tier()
    assert r["cpu"]["max"] == isa.TIERS[-1]
    assert r["cpu"]["kernels"] == isa.kernel_library_tier(isa.host_tier())
    assert r["worst"] < 1e-4
    assert r["clusters"] and all(c == [1, 0] for c in r["clusters"].values())


@pytest.mark.parametrize("cap", ["x86-64-v2", "avx2"])
def test_cap_selects_lower_kernels_and_code(tmp_path, cap):
    if isa.TIERS.index(isa.host_tier()) < isa.TIERS.index(cap):
        pytest.skip(f"this CPU is below {cap}")
    r = _run(tmp_path, cap)
    assert {k: r["cpu"][k] for k in ("detected", "max", "selected", "kernels")} == \
        {"detected": isa.host_tier(), "max": cap, "selected": cap, "kernels": cap}
    assert r["cpu"]["bf16_gemm"] is False
    assert r["worst"] < 1e-4
    # One compile per cluster for all the shapes, none fell back.
    assert r["clusters"] and all(c == [1, 0] for c in r["clusters"].values())
    if shutil.which("objdump"):
        assert r["libraries"] and not any(_has_zmm(p) for p in r["libraries"])
        assert not _has_zmm(_kernel_library(cap))


def test_target_isa_option_lowers_generated_code_only(tmp_path):
    if isa.TIERS.index(isa.host_tier()) < isa.TIERS.index("avx512"):
        pytest.skip("needs an AVX-512 CPU")
    r = _run(tmp_path, target_isa="avx2")
    assert r["cpu"]["kernels"] == "avx512"  # the kernels keep the CPU's tier
    assert r["worst"] < 1e-4
    if shutil.which("objdump"):
        assert r["libraries"] and not any(_has_zmm(p) for p in r["libraries"])
        assert _has_zmm(_kernel_library("avx512"))


def test_kernel_libraries_export_only_their_table():
    for path in glob.glob(_kernel_library("*")):
        out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True,
                             text=True, check=True).stdout
        exported = sorted(line.split()[-1] for line in out.splitlines() if line.strip())
        assert exported == ["disc_kernel_table_v1"], (path, exported[:10])


INSTALL_SCRIPT = r'''
import json, sys
import numpy as np
import tensorflow as tf
import blade_disc_tf as disc

disc.enable(cache_dir=sys.argv[1], min_cluster_size=1)
f = tf.function(lambda a, b: tf.nn.relu(tf.matmul(a, b) + 1.0),
                input_signature=[tf.TensorSpec([None, None])] * 2)
a = np.random.default_rng(0).standard_normal((64, 32), np.float32)
err = float(np.max(np.abs(f(a, a.T).numpy() - np.maximum(a.astype(np.float64) @ a.T + 1, 0))))
stats = disc.stats()
print(json.dumps({"err": err, "kernels": stats["cpu"]["kernels"],
                  "reasons": [r for c in stats["clusters"].values() for r in c["fallback_reasons"]],
                  "compiles": sum(c["compiles"] for c in stats["clusters"].values())}))
'''


@pytest.mark.parametrize("kept", [["avx2"], []])
def test_missing_kernel_libraries(tmp_path, kept):
    """An install missing the CPU's kernel library uses the next tier down;
    one with none runs its clusters in TF (a counted fallback), never fails."""
    folder = tmp_path / "lib"
    folder.mkdir()
    shutil.copy(_library.library_path(), folder)
    for tier in kept:
        shutil.copy(_kernel_library(tier), folder)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
               DISC_OP_LIBRARY=str(folder / os.path.basename(_library.library_path())))
    env.pop("DISC_MAX_CPU_ISA", None)
    proc = subprocess.run([sys.executable, "-c", INSTALL_SCRIPT, str(tmp_path / "cache")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["err"] < 1e-4
    if kept:
        assert r["kernels"] == "avx2" and r["reasons"] == [] and r["compiles"] == 1
    else:
        assert r["kernels"] == ""
        assert r["reasons"] == ["no kernel library for this CPU beside the op library"]
