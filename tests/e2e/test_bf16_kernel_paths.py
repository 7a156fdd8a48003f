"""Each path of the bf16 fast-math GEMM this CPU has, in its own process
(the tier cap is read once per process): AMX tiles (runtime/cpu/gemm_amx.cc,
tier avx512_amx) and VDPBF16PS (tier avx512_bf16, also what an AMX CPU runs
under DISC_MAX_CPU_ISA=avx512_bf16), each within the documented error bound
against float64 over shapes that cover the tile edges: rows not a multiple
of 16 (AMX takes whole 16-row blocks, VDPBF16PS the rest), columns not a
multiple of 16, odd k and k across the kernel's 768-long chunks, transposed
operands, batches split into tasks and weights packed once; and Conv2D
(patch rows as A: strided, padded, the 3-channel stem, 1x1).  Where the CPU
has neither path the test skips (test_fast_math.py covers the fp32 path
everywhere)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from blade_disc_tf.compiler.build import isa

SCRIPT = r'''
import json, sys
import numpy as np
import tensorflow as tf
import blade_disc_tf as disc

disc.enable(cache_dir=sys.argv[1], min_cluster_size=1, fast_math="bf16")
# The bf16 kernel also where it would not run by default (Intel Xeons
# without AMX), for the rest of this process.
disc.kernel_policy(bf16_gemm="on").__enter__()
rng = np.random.default_rng(7)


def bound(a, b, k):
    return (2.0 ** -7 + 2.0 ** -15 + k * 2.0 ** -23) * (np.abs(a) @ np.abs(b)) + 1e-30


worst, seen = 0.0, 0.0
def check(got, a, b, k):
    global worst, seen
    a, b = a.astype(np.float64), b.astype(np.float64)
    err = np.abs(got.astype(np.float64) - a @ b)
    worst = max(worst, float(np.max(err / bound(a, b, k))))
    seen = max(seen, float(np.max(err / (np.abs(a) @ np.abs(b) + 1e-30))))


for ta, tb in [(False, False), (True, False), (False, True), (True, True)]:
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
    def f(x, y):
        return tf.matmul(x, y, transpose_a=ta, transpose_b=tb)
    for m, k, n in [(16, 32, 16), (17, 33, 31), (40, 257, 100), (64, 129, 48), (96, 768, 70),
                    (33, 1537, 65), (200, 3, 513), (47, 64, 2049)]:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        check(f(a.T.copy() if ta else a, b.T.copy() if tb else b).numpy(), a, b, k)

@tf.function(input_signature=[tf.TensorSpec([None, None, None], tf.float32)] * 2)
def batched(x, y):
    return tf.matmul(x, y)
for batch, bb, m, k, n in [(2, 2, 50, 64, 300), (3, 1, 77, 33, 260), (4, 4, 128, 64, 128)]:
    a = rng.standard_normal((batch, m, k)).astype(np.float32)
    b = rng.standard_normal((bb, k, n)).astype(np.float32)
    got = batched(a, b).numpy()
    for i in range(batch):
        check(got[i], a[i], b[i if bb > 1 else 0], k)

w = tf.constant(rng.standard_normal((300, 190)).astype(np.float32))  # packed once
@tf.function(input_signature=[tf.TensorSpec([None, 300], tf.float32)])
def dense(x):
    return tf.matmul(x, w)
for m in (16, 35, 300):
    x = rng.standard_normal((m, 300)).astype(np.float32)
    for _ in range(2):
        check(dense(x).numpy(), x, w.numpy(), 300)

# Conv2D (runtime/cpu/conv_bf16.cc): patch rows as A, the filter packed once.
conv_worst, conv_seen = 0.0, 0.0
for kh, kw, ci, co, stride, padding in [(3, 3, 16, 70, 1, "SAME"), (7, 7, 3, 64, 2, "SAME"),
                                        (1, 1, 64, 130, 1, "VALID"), (3, 3, 40, 17, 2, "VALID")]:
    f = rng.standard_normal((kh, kw, ci, co)).astype(np.float32)
    filt = tf.Variable(f)
    @tf.function(input_signature=[tf.TensorSpec([None, None, None, ci], tf.float32)])
    def conv(x):
        return tf.nn.conv2d(x, filt, stride, padding)
    for n, h, w in [(1, 9, 11), (2, 17, 16), (3, 21, 40)]:
        x = rng.standard_normal((n, h, w, ci)).astype(np.float32)
        got = conv(x).numpy().astype(np.float64)
        x64, f64 = tf.constant(x.astype(np.float64)), tf.constant(f.astype(np.float64))
        want = tf.nn.conv2d(x64, f64, stride, padding).numpy()
        scale = tf.nn.conv2d(tf.abs(x64), tf.abs(f64), stride, padding).numpy() + 1e-30
        err = np.abs(got - want)
        conv_worst = max(conv_worst, float(np.max(
            err / ((2.0 ** -7 + 2.0 ** -15 + kh * kw * ci * 2.0 ** -23) * scale))))
        conv_seen = max(conv_seen, float(np.max(err / scale)))

stats = disc.stats()
print(json.dumps({"worst": worst, "seen": seen, "conv_worst": conv_worst,
                  "conv_seen": conv_seen, "cpu": stats["cpu"],
                  "weights": stats.get("bf16_weights", {}),
                  "fallbacks": sum(c["fallbacks"] for c in stats["clusters"].values())}))
'''

PATHS = {"avx512_amx": "", "avx512_bf16": "avx512_bf16"}  # path -> DISC_MAX_CPU_ISA


@pytest.mark.parametrize("path", sorted(PATHS))
def test_path_within_documented_bound(tmp_path, path):
    if isa.TIERS.index(isa.host_tier()) < isa.TIERS.index(path):
        pytest.skip(f"this CPU has no {path} tier")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("DISC_MAX_CPU_ISA", None)
    if PATHS[path]:
        env["DISC_MAX_CPU_ISA"] = PATHS[path]
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "cache")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["cpu"]["selected"] == path, r["cpu"]
    assert r["fallbacks"] == 0, r
    assert r["worst"] <= 1.0, r
    assert r["seen"] > 2.0 ** -12, r  # bf16 rounding visible: the bf16 kernel ran
    assert r["conv_worst"] <= 1.0, r
    assert r["conv_seen"] > 2.0 ** -12, r
