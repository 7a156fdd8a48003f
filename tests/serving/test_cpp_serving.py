"""The serving path without Python: a C++ program (serve_main.cc) built
against the wheel's libtensorflow_cc.so.2 and libtensorflow_framework.so.2
loads the op library, then tensorflow::LoadSavedModel as TF Serving does, and
runs converted models with no compiler on PATH."""
from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from serving_fixtures import (  # noqa: F401
    HERE, assert_served_without_compiler, convert, no_compiler_env, run_fresh, serving_base)


def _read(stem: str) -> np.ndarray:
    with open(stem + ".shape") as f:
        shape = tuple(int(d) for d in f.read().split())
    return np.fromfile(stem + ".bin", np.float32).reshape(shape)


@pytest.fixture(scope="module")
def serve_main(tmp_path_factory):
    import tensorflow as tf

    lib_dir = tf.sysconfig.get_lib()
    include = tf.sysconfig.get_include()
    for header in ("tensorflow/cc/saved_model/loader.h", "tensorflow/c/c_api.h"):
        assert os.path.isfile(os.path.join(include, header)), f"the wheel lacks {header}"
    exe = str(tmp_path_factory.mktemp("serve_main") / "serve_main")
    cmd = ["g++", "-O1", *tf.sysconfig.get_compile_flags(), "-DNDEBUG",
           "-Wno-deprecated-declarations", os.path.join(HERE, "serve_main.cc"), "-o", exe,
           f"-L{lib_dir}", "-l:libtensorflow_cc.so.2", "-l:libtensorflow_framework.so.2",
           f"-Wl,-rpath,{lib_dir}", "-ldl"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return exe


@pytest.mark.parametrize("name", ["tf1", "bert"])
def test_cpp_server_runs_converted_model(name, serve_main, serving_base, tmp_path):
    from blade_disc_tf._library import library_path

    m = convert(name, serving_base)
    io_dir = str(tmp_path / "io")
    # Python first, also a fresh process without compiler: saves the inputs
    # and the original model's outputs (stock TF) for the C++ server.
    result, _ = run_fresh(m, m.converted, serving_base, save_io=io_dir)
    assert_served_without_compiler(result)
    proc = subprocess.run([serve_main, library_path(), m.converted, m.signature, io_dir,
                           str(len(m.shapes))], capture_output=True, text=True,
                          env=no_compiler_env(serving_base), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = json.loads(proc.stdout.strip().splitlines()[-1])["clusters"]
    assert stats and all(c["compiles"] == 0 and c["fallbacks"] == 0 and
                         c["cache_hits"] == c["runs"] > 0 for c in stats.values())
    outputs = sorted({f[len("out0_"):-len(".bin")] for f in os.listdir(io_dir)
                      if f.startswith("out0_") and f.endswith(".bin")})
    assert outputs
    for k in range(len(m.shapes)):
        for out in outputs:
            want = _read(os.path.join(io_dir, f"out{k}_{out}"))
            got = _read(os.path.join(io_dir, f"got{k}_{out}"))
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
