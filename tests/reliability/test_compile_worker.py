"""The compile worker (blade_disc_tf/_compile_worker.py, compiler/remote/):
asynchronous compiles run in a process of its own, without TensorFlow's
runtime; a worker that dies or hangs fails that compile (DiscLaunch runs the
cluster in TF, counted) and the next compile starts a new one; no worker
outlives its parent."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf import _compile_worker
from blade_disc_tf.compiler import service
from blade_disc_tf.compiler.frontend.tf_protos import op_defs_for
from blade_disc_tf.compiler.options import CompileOptions
from helpers import REPO, fake_compiler, reasons

# Kills the compile worker that runs it (its parent, when that is the
# worker); anything else that runs it (the TF process's probes of the
# compiler's flags) gets a failure.
KILL_THE_WORKER = ('if tr "\\0" " " < /proc/$PPID/cmdline | grep -q "remote/boot.py"; then '
                   "kill -9 $PPID; fi; exit 1")


def _batch_norm_fdef() -> bytes:
    """A cluster that reads the second output list of FusedBatchNormV3 (the
    worker needs that op's OpDef to resolve it)."""
    @tf.function
    def f(x):
        y, mean, _, _, _, _ = tf.raw_ops.FusedBatchNormV3(
            x=x, scale=tf.ones([3]), offset=tf.zeros([3]), mean=tf.zeros([3]),
            variance=tf.ones([3]), is_training=False)
        return tf.tanh(y) * 2.0 + mean[0]

    cf = f.get_concrete_function(tf.TensorSpec([None, 4, 4, 3], tf.float32))
    return cf.function_def.SerializeToString(deterministic=True)


REQUEST = {"function": "bn", "key": "k1", "inputs": [{"dtype": 1, "rank": 4}]}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_round_trip_gives_the_in_process_library_without_tensorflow(tmp_path):
    fdef = _batch_norm_fdef()
    dump = tmp_path / "dump"
    options = CompileOptions(cache_dir=str(tmp_path / "cache"), dump_dir=str(dump),
                             background=True)
    worker = _compile_worker.CompileWorker(nice=15)
    try:
        reply = worker.compile(REQUEST, fdef, options, op_defs_for(fdef))
        assert reply["ok"] and reply["compiled"], reply
        assert reply["seconds"] >= reply["codegen_seconds"] > 0, reply
        with open(f"/proc/{worker.pid}/maps") as f:
            maps = f.read()
        assert "libtensorflow" not in maps and "_pywrap_tensorflow" not in maps
        assert os.getpriority(os.PRIO_PROCESS, worker.pid) == 15
        dumped = {name for _, _, names in os.walk(dump) for name in names}
        assert {"tf_graph.pbtxt", "compile.log"} <= dumped, dumped
        # The same request in this process: the same library, from the disk cache.
        local = service.compile_request(REQUEST, fdef, CompileOptions(cache_dir=options.cache_dir))
        assert local["ok"] and not local["compiled"], local
        assert local["path"] == reply["path"]
        assert worker.starts == 1
    finally:
        worker.stop()


def test_compile_error_comes_back_as_a_reply(tmp_path):
    fdef = _batch_norm_fdef()
    worker = _compile_worker.CompileWorker(nice=15)
    try:
        options = CompileOptions(cache_dir=str(tmp_path / "cache"), forbid_compile=True)
        reply = worker.compile(REQUEST, fdef, options, op_defs_for(fdef))
        assert not reply["ok"] and "forbid" in reply["error"].lower(), reply
        bad = worker.compile(REQUEST, b"\x01not a function def", options, [])
        assert not bad["ok"], bad
        assert worker.starts == 1 and worker.pid is not None   # still the same worker
    finally:
        worker.stop()


def test_hung_worker_times_out_and_is_replaced(tmp_path, monkeypatch):
    fdef = _batch_norm_fdef()
    options = CompileOptions(cache_dir=str(tmp_path / "cache"), timeout_s=0.5)
    worker = _compile_worker.CompileWorker(nice=15)
    try:
        forbidden = CompileOptions(cache_dir=options.cache_dir, forbid_compile=True)
        assert not worker.compile(REQUEST, fdef, forbidden, op_defs_for(fdef))["ok"]
        first = worker.pid
        os.kill(first, signal.SIGSTOP)
        monkeypatch.setattr(_compile_worker, "REPLY_GRACE_S", 1.0)
        t0 = time.monotonic()
        reply = worker.compile(REQUEST, fdef, options, op_defs_for(fdef))
        assert not reply["ok"] and "did not answer in time" in reply["error"], reply
        assert time.monotonic() - t0 < 10
        assert _gone_within(first, 5)
        monkeypatch.setattr(_compile_worker, "REPLY_GRACE_S", 600.0)
        again = worker.compile(REQUEST, fdef, options.__class__(cache_dir=options.cache_dir),
                               op_defs_for(fdef))
        assert again["ok"], again
        assert worker.starts == 2 and worker.pid != first
    finally:
        worker.stop()


def test_worker_crash_falls_back_to_tf_and_the_next_compile_restarts_it(disc, tmp_path):
    from blade_disc_tf import api

    killer = fake_compiler(tmp_path, KILL_THE_WORKER)
    disc.set_options(async_compile=True, cxx=killer)
    worker = api._session.registration.worker
    starts = worker.starts
    # An earlier test's worker still running takes the compile (no start).
    fresh = 0 if worker.pid is not None else 1
    f = tf.function(lambda x: tf.tanh(x) * x + 1.0,
                    input_signature=[tf.TensorSpec([None], tf.float32)])
    x = np.arange(5, dtype=np.float32)
    for _ in range(3):
        np.testing.assert_allclose(f(x).numpy(), np.tanh(x) * x + 1.0, rtol=1e-6)
        assert disc.wait_for_compiles(120)
    (c,) = disc.stats()["clusters"].values()
    assert c["compiles"] == 0 and c["runs"] == 3 and c["fallbacks"] == 3, c
    assert worker.starts == starts + fresh and worker.pid is None
    assert set(reasons(disc.stats())) - {"compiling"}, c   # the failure is counted

    disc.set_options(cxx="c++")
    g = tf.function(lambda x: tf.exp(x) * 2.0 - x,
                    input_signature=[tf.TensorSpec([None], tf.float32)])
    g(x)
    assert disc.wait_for_compiles(300)
    np.testing.assert_allclose(g(x).numpy(), np.exp(x) * 2.0 - x, rtol=1e-6)
    c = [v for k, v in disc.stats()["clusters"].items() if v["compiles"]]
    assert len(c) == 1 and c[0]["cache_hits"] == 1, c
    assert worker.starts == starts + fresh + 1 and worker.pid is not None


PARENT = textwrap.dedent("""
    import os, signal, sys, threading, time
    sys.path.insert(0, {tests!r})
    from blade_disc_tf import _compile_worker
    from blade_disc_tf.compiler.options import CompileOptions
    from test_compile_worker import REQUEST, _batch_norm_fdef
    from blade_disc_tf.compiler.frontend.tf_protos import op_defs_for
    fdef = _batch_norm_fdef()
    worker = _compile_worker.CompileWorker(nice=15)
    options = CompileOptions(cache_dir=sys.argv[1], forbid_compile=True)
    assert not worker.compile(REQUEST, fdef, options, op_defs_for(fdef))["ok"]
    print(worker.pid, flush=True)
    mode = sys.argv[2]
    if mode == "exit":
        sys.exit(0)
    if mode == "kill_during_compile":
        slow = CompileOptions(cache_dir=sys.argv[1], cxx=sys.argv[3])
        threading.Thread(target=worker.compile, args=(REQUEST, fdef, slow, op_defs_for(fdef)),
                         daemon=True).start()
        while not os.path.exists(sys.argv[4]):
            time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.parametrize("mode", ["exit", "kill", "kill_during_compile"])
def test_no_worker_outlives_its_parent(tmp_path, mode):
    pidfile = tmp_path / "compiler.pid"
    # Only the build (-o) sleeps, not the worker's probes of the compiler's flags.
    slow = fake_compiler(tmp_path, 'case " $* " in *" -o "*) '
                                   f'echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; '
                                   "exec sleep 60;; esac; exit 1")
    code = PARENT.format(tests=os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "cache"), mode, slow,
                           str(pidfile)], capture_output=True, text=True, timeout=300,
                          env=env, cwd=REPO)
    assert proc.returncode == (0 if mode == "exit" else -signal.SIGKILL), proc.stderr[-3000:]
    worker = int(proc.stdout.split()[0])
    assert _gone_within(worker, 10), f"worker {worker} outlived its parent"
    if mode == "kill_during_compile":
        assert _gone_within(int(pidfile.read_text()), 10), "the worker's compiler outlived it"
