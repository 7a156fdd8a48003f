"""The interpreter exits while a compile is in flight: exit code 0, no hang,
no crash (the callback is unregistered at exit and the C++ compile thread
must not call into a finalizing interpreter)."""
import time

import pytest

from helpers import fake_compiler, run_python

SCRIPT = """
import os, sys, threading, time
import numpy as np
import tensorflow as tf
import blade_disc_tf as disc
disc.enable(min_cluster_size=1, cache_dir=sys.argv[1] if len(sys.argv) > 1 else {cache!r},
            cxx={cxx!r}, async_compile={async_!r})
f = tf.function(lambda x: tf.tanh(x) * x + 1.0,
                input_signature=[tf.TensorSpec([None], tf.float32)])
x = np.arange(5, dtype=np.float32)
{body}
print("main done", flush=True)
"""

ASYNC_BODY = """
np.testing.assert_allclose(f(x).numpy(), np.tanh(x) * x + 1.0, rtol=1e-6)  # TF while compiling
"""

THREAD_BODY = """
t = threading.Thread(target=lambda: f(x), daemon=True)   # blocks on the compile
t.start()
time.sleep({delay})
"""


@pytest.mark.parametrize("mode,sleep_s,delay", [
    ("async", 30, 0),        # exits while the compiler runs
    ("thread", 30, 1.0),     # a TF thread is blocked waiting for the compile
    ("thread", 1, 0.7),      # the compile finishes while the interpreter finalizes
])
def test_exit_during_compile(tmp_path, mode, sleep_s, delay):
    cxx = fake_compiler(tmp_path, f"sleep {sleep_s}; exit 1")
    body = ASYNC_BODY if mode == "async" else THREAD_BODY.format(delay=delay)
    code = SCRIPT.format(cache=str(tmp_path / "cache"), cxx=cxx, async_=mode == "async",
                         body=body)
    t0 = time.monotonic()
    proc = run_python(code, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "main done" in proc.stdout
    assert time.monotonic() - t0 < 45, "exit waited for the compile"
    assert "Fatal Python error" not in proc.stderr


def test_callback_outlives_unregister():
    # The compile thread may hold the callback pointer when atexit clears it
    # (or be inside the call): the ctypes thunk must stay valid afterwards.
    import ctypes
    import gc
    import json
    import weakref

    from blade_disc_tf import _compile_bridge, _library
    from blade_disc_tf.config import from_environment

    class FakeLibrary:
        callback = None

        def set_compile_callback(self, cb):
            self.callback = cb

    lib = FakeLibrary()
    reg = _compile_bridge.CompilerRegistration(lib, from_environment)
    alive = weakref.ref(lib.callback)
    ptr = ctypes.cast(lib.callback, ctypes.c_void_p).value
    reg.unregister()
    assert lib.callback is None                     # the C side was told
    del reg
    gc.collect()
    assert alive() is not None, "compile callback freed while C++ may still call it"
    reply = ctypes.create_string_buffer(4096)
    rc = _library.COMPILE_CALLBACK(ptr)(b"not json", None, 0, reply, len(reply))
    assert rc == 0 and json.loads(reply.value)["ok"] is False
