"""The precompiled prelude (build/precompiled.py): built once per flags in
the background of the first build, then used by the builds that follow
(GCC really takes it: -H marks it '!'), never waited for, and a .gch that is
garbage or not ours costs only the parse."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler.build import precompiled
from blade_disc_tf.compiler.build.cache import build
from blade_disc_tf.compiler.build.command import object_command
from blade_disc_tf.compiler.codegen.cpu.prelude import PRELUDE_HEADER
from blade_disc_tf.compiler.codegen.cpu.source import generate_library
from blade_disc_tf.compiler.service import _lower
from blade_disc_tf.compiler.target import get_target

from .harness import Executable

F = tf.float32
EXTRA = ("-march=x86-64-v2",)   # any tier: the key follows the flags


@pytest.fixture(autouse=True)
def fresh_process_state(monkeypatch):
    monkeypatch.setattr(precompiled, "_started", set())
    monkeypatch.setattr(precompiled, "_ready", {})


def _library(fn, rank: int):
    spec = tf.TensorSpec([None] * rank, F)
    concrete = tf.function(fn).get_concrete_function(spec)
    req = {"function": "f", "key": "k", "inputs": [{"dtype": 1, "rank": rank, "value": None}]}
    func = _lower(req, concrete.function_def.SerializeToString(), None, "", get_target("cpu"))
    return generate_library(func, 1)


def _gch(cache_dir) -> str:
    key = precompiled.pch_key("c++", EXTRA, PRELUDE_HEADER)
    return os.path.join(str(cache_dir), precompiled.PCH_FOLDER, key, PRELUDE_HEADER + ".gch")


def _uses_gch(gch: str, tmp_path, after: tuple = ()) -> bool:
    """Whether GCC takes `gch` for a unit including the prelude (then the
    runtime headers `after`), compiled with the flags of a generated unit."""
    src = tmp_path / "tiny.cc"
    includes = "".join(f'#include "{h}"\n' for h in (PRELUDE_HEADER,) + after)
    src.write_text(includes + "int tiny() { return 1; }\n")
    root = gch[:-len(PRELUDE_HEADER + ".gch")].rstrip(os.sep)
    cmd = object_command("c++", str(src), str(tmp_path / "tiny.o"), EXTRA + ("-I", root))
    proc = subprocess.run(cmd + ["-H"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return f"! {gch}" in proc.stderr


def test_control_flow_headers_follow_the_precompiled_prelude(tmp_path):
    """A program with loops or conditionals includes disc_loop.h and
    disc_branch.h after the prelude, and they include the prelude again: GCC
    knows it by the .gch's folder, so the header must be found there too."""
    cache = tmp_path / "cache"
    _build(_library(lambda x: tf.tanh(x) * 2.0, 2), cache)
    precompiled.wait_for_builds()
    gch = _gch(cache)
    assert _uses_gch(gch, tmp_path, ("cpu/prelude/disc_loop.h", "cpu/prelude/disc_branch.h"))


def _build(units, cache_dir, log_path=None):
    single, sources = units
    return build(sources, str(cache_dir), "c++", EXTRA, False, 120, log_path,
                 key_source=single, prelude=PRELUDE_HEADER)


def test_built_in_background_then_used(tmp_path):
    cache = tmp_path / "cache"
    path, compiled, _ = _build(_library(lambda x: tf.tanh(x) * 2.0, 2), cache)
    assert compiled
    precompiled.wait_for_builds()
    gch = _gch(cache)
    assert os.path.isfile(gch) and _uses_gch(gch, tmp_path)

    log = tmp_path / "compile.log"
    path, compiled, _ = _build(_library(lambda x: tf.exp(x) - x, 3), cache, str(log))
    assert compiled
    assert f"-I {os.path.dirname(os.path.dirname(os.path.dirname(gch)))} " in log.read_text()
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    (got,) = Executable(path)([x], [np.float32])
    np.testing.assert_allclose(got, np.exp(x) - x, rtol=1e-6)


def test_one_build_per_key_after_a_build_that_compiled(tmp_path):
    assert precompiled.ready_flags(str(tmp_path), "c++", EXTRA, PRELUDE_HEADER, 30) == ()
    assert not precompiled._started
    for _ in range(3):
        precompiled.build_in_background(str(tmp_path), "c++", EXTRA, PRELUDE_HEADER, 30)
    assert len(precompiled._started) == 1
    precompiled.wait_for_builds()
    flags = precompiled.ready_flags(str(tmp_path), "c++", EXTRA, PRELUDE_HEADER, 30)
    assert flags and os.path.isfile(os.path.join(flags[1], PRELUDE_HEADER + ".gch"))
    # Another cache dir of this process finds the one already built.
    assert precompiled.ready_flags(str(tmp_path / "other"), "c++", EXTRA, PRELUDE_HEADER,
                                   30) == flags
    assert precompiled.ready_flags(str(tmp_path), "c++", EXTRA, None, 30) == ()


def test_no_build_when_the_library_was_cached(tmp_path):
    units = _library(lambda x: tf.tanh(x) * 2.0, 2)
    _build(units, tmp_path / "cache")
    precompiled.wait_for_builds()
    precompiled._started.clear()
    precompiled._ready.clear()
    path, compiled, _ = _build(units, tmp_path / "cache")
    assert not compiled and not precompiled._started


def test_other_flags_other_header(tmp_path):
    assert (precompiled.pch_key("c++", EXTRA, PRELUDE_HEADER)
            != precompiled.pch_key("c++", ("-march=x86-64-v3",), PRELUDE_HEADER))


@pytest.mark.parametrize("spoil", ["garbage", "group_writable"])
def test_spoiled_gch_costs_only_the_parse(tmp_path, spoil):
    cache = tmp_path / "cache"
    gch = _gch(cache)
    os.makedirs(os.path.dirname(gch))
    with open(gch, "wb") as f:
        f.write(os.urandom(4096))
    if spoil == "group_writable":
        os.chmod(gch, 0o664)
        assert precompiled.ready_flags(str(cache), "c++", EXTRA, PRELUDE_HEADER, 30) == ()
    path, compiled, _ = _build(_library(lambda x: tf.sigmoid(x), 1), cache)
    x = np.linspace(-3, 3, 7).astype(np.float32)
    (got,) = Executable(path)([x], [np.float32])
    np.testing.assert_allclose(got, tf.sigmoid(x).numpy(), rtol=1e-6)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_exit_stops_a_build_in_flight(tmp_path):
    """A process leaving while its header builds kills the compiler and
    leaves no temp behind."""
    script = (
        "import time, sys\n"
        "from blade_disc_tf.compiler.build import precompiled\n"
        f"precompiled.build_in_background({str(tmp_path)!r}, 'c++', {EXTRA!r}, "
        f"{PRELUDE_HEADER!r}, 60)\n"
        # until the compiler runs (its start waits for a busy machine)
        "deadline = time.monotonic() + 30\n"
        "while not precompiled._running and time.monotonic() < deadline:\n"
        "    time.sleep(0.02)\n"
        "print(*precompiled._running)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    (pgid,) = map(int, proc.stdout.split())
    deadline = time.monotonic() + 20      # killed ones are reaped by init
    while time.monotonic() < deadline and _group_alive(pgid):
        time.sleep(0.1)
    assert not _group_alive(pgid)
    left = [f for _, _, files in os.walk(tmp_path) for f in files]
    assert not left, left
