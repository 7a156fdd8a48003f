"""Async (background) compiles run the system compiler at a lower priority
so that the requests running in TF meanwhile keep the CPUs; synchronous
compiles keep the caller's priority."""
import os
import stat
import subprocess
import sys
import threading

import pytest
import tensorflow as tf

from blade_disc_tf.compiler.build.priority import BACKGROUND_NICE, at_low_priority
from blade_disc_tf.compiler.options import CompileOptions
from blade_disc_tf.compiler.service import compile_request

from .test_service import _concrete, _req, gelu_like


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_runs_on_a_lower_priority_thread_and_children_inherit():
    base = _nice()

    def work():
        child = subprocess.run([sys.executable, "-c", "import os; print(os.nice(0))"],
                               capture_output=True, text=True, check=True)
        return _nice(), int(child.stdout)
    mine, child = at_low_priority(work)
    assert mine == child == min(base + BACKGROUND_NICE, 19)
    assert _nice() == base  # the calling thread keeps its priority


def test_errors_reach_the_caller():
    def fail():
        raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        at_low_priority(fail)


@pytest.mark.parametrize("background", [True, False])
def test_compiler_priority_follows_the_request(tmp_path, background):
    log = tmp_path / "nice.log"
    cxx = tmp_path / "cxx"
    cxx.write_text(f"#!/bin/sh\ncut -d' ' -f19 /proc/$$/stat >> {log}\nexec c++ \"$@\"\n")
    cxx.chmod(cxx.stat().st_mode | stat.S_IXUSR)
    req, data = _req(_concrete(gelu_like, tf.TensorSpec([None, None]), tf.TensorSpec([None])))
    reply = compile_request({**req, "background": background}, data,
                            CompileOptions(cache_dir=str(tmp_path / "c"), cxx=str(cxx)))
    assert reply["ok"], reply
    seen = {int(v) for v in log.read_text().split()}  # --version probe, compile, link
    want = min(_nice() + BACKGROUND_NICE, 19) if background else _nice()
    assert seen == {want}, seen
