"""Builds and converts the serving test models once per test session, and
runs the fresh-process check (serving_check.py) with the compiler made
unavailable."""
from __future__ import annotations

import dataclasses
import json
import os
import stat
import subprocess
import sys
from typing import Optional

import pytest

import serving_models

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> (builder, format, signature checked)
MODELS = {
    "bert": (serving_models.save_bert, "tf2", "serving_default"),
    "cnn": (serving_models.save_cnn, "tf2", "serving_default"),
    "tf1": (serving_models.save_tf1, "tf1", "probs"),
}


@dataclasses.dataclass
class Converted:
    name: str
    original: str
    converted: str
    format: str
    signature: str
    shapes: list
    summary: object
    cache_dir: str


_done: dict = {}


def convert(name: str, base: str) -> Converted:
    """The model `name` saved and converted under `base` (memoized)."""
    if name not in _done:
        import blade_disc_tf as disc

        builder, fmt, signature = MODELS[name]
        original, converted = os.path.join(base, name), os.path.join(base, name + "_disc")
        shapes = builder(original)
        cache = os.path.join(base, "cache")
        summary = disc.convert_saved_model(original, converted, cache_dir=cache)
        _done[name] = Converted(name, original, converted, fmt, signature, shapes, summary, cache)
    return _done[name]


@pytest.fixture(scope="session")
def serving_base(tmp_path_factory):
    return str(tmp_path_factory.mktemp("serving"))


def no_compiler_env(base: str) -> dict:
    """Environment whose `c++`, `g++` and `cc` fail, with TF warnings shown."""
    bad = os.path.join(base, "failing_cxx")
    os.makedirs(bad, exist_ok=True)
    for tool in ("c++", "g++", "cc"):
        path = os.path.join(bad, tool)
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho 'compiler disabled for this test' >&2\nexit 1\n")
        os.chmod(path, stat.S_IRWXU)
    env = dict(os.environ)
    env["PATH"] = bad + os.pathsep + env.get("PATH", "")
    env["TF_CPP_MIN_LOG_LEVEL"] = "1"
    for var in ("DISC_CXX", "CXX"):
        env.pop(var, None)
    return env


def run_fresh(model: Converted, converted_dir: str, base: str, save_io: str = "",
              env: Optional[dict] = None) -> tuple:
    """serving_check.py in a new process: (its JSON result, its stderr).
    env: variables set for that process besides no_compiler_env's."""
    cmd = [sys.executable, os.path.join(HERE, "serving_check.py"), model.original,
           converted_dir, model.format, model.signature, json.dumps(model.shapes)]
    if save_io:
        cmd += ["--save-io", save_io]
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          env={**no_compiler_env(base), **(env or {})}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def assert_served_without_compiler(result: dict, tol: float = 1e-4) -> None:
    """A run_fresh result where every cluster ran its embedded executable and
    the outputs equal the original model's (in stock TF) for every shape."""
    assert not result["compiler_imported"]
    assert result["compiles"] == 0 and result["clusters_created"] == 0  # nothing re-clustered
    assert result["fallback_reasons"] == {}
    assert result["runs"] > 0 and result["cache_hits"] == result["runs"]
    assert max(max(e.values()) for e in result["errors"]) < tol
