"""Shared bits of the reliability tests."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap

import numpy as np
import tensorflow as tf

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def softplus_fn():
    """A fresh tf.function whose whole body is one cluster."""
    return tf.function(lambda x, y: tf.nn.softplus(x) * y - tf.exp(y),
                       input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)


def check_against_tf(f, shapes=((2, 3), (5, 1), (0, 4), (1, 1))):
    for i, shape in enumerate(shapes):
        rng = np.random.default_rng(i)
        x = rng.standard_normal(shape).astype(np.float32)
        y = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(f(x, y).numpy(), f.python_function(x, y).numpy(),
                                   rtol=1e-5, atol=1e-6)


def reasons(stats: dict) -> dict:
    out: dict = {}
    for c in stats.get("clusters", {}).values():
        for r, n in c.get("fallback_reasons", {}).items():
            out[r] = out.get(r, 0) + n
    return out


def counter(stats: dict, name: str) -> int:
    return sum(c.get(name, 0) for c in stats.get("clusters", {}).values())


def fake_compiler(tmp_path, body: str) -> str:
    """An executable `c++` that answers --version and otherwise runs `body` (sh)."""
    path = tmp_path / "fake-c++"
    path.write_text("#!/bin/sh\n"
                    'if [ "$1" = "--version" ]; then echo "fake-c++ 1.0"; exit 0; fi\n'
                    + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def run_python(code: str, timeout: float, env_extra: dict | None = None):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=REPO + os.pathsep +
               os.environ.get("PYTHONPATH", ""))
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=REPO)
