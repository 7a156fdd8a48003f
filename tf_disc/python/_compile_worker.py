"""The TF process's side of its compile worker (blade_disc_tf.compiler.remote):
one long-lived process, started on the first request that needs it, that
compiles at low CPU priority while this process's calls run in TF.

The worker is started bare: a fresh interpreter running the compiler's boot
script (no fork of this process, no TensorFlow runtime), in a session of its
own (its CPU priority and autogroup are its own).  A request sends the
request, the FunctionDef, the OpDefs its ops use and the compile options, and
waits for the reply without holding the GIL.  A worker that dies, hangs past
the deadline or answers garbage fails that one compile (DiscLaunch runs the
cluster in TF) and is replaced on the next request; one that never comes up
(no usable interpreter, an import error) is not retried and the compiles
run in this process.  The worker exits when this process does."""
from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time

_log = logging.getLogger("blade_disc_tf")

# How long stop() lets the worker exit by itself (it then kills its
# compilers) before killing it.
STOP_GRACE_S = 2.0
# Beyond the system compiler's own timeouts (a parallel build, then a link).
REPLY_GRACE_S = 60.0
STOPPED = "the process is exiting"


class WorkerUnavailable(Exception):
    """The worker could not be started: compile in this process instead."""


def reply_deadline_s(compile_timeout_s: float) -> float:
    """How long a request may wait for its reply: the worker's builds time
    out on their own (a parallel compile, then a link); this only guards
    against a worker that stopped answering."""
    return 2 * float(compile_timeout_s) + REPLY_GRACE_S


def _boot_config(nice: int) -> str:
    import blade_disc_tf
    import tensorflow

    return json.dumps({"sys_path": list(sys.path),
                       "package_path": list(blade_disc_tf.__path__),
                       "tensorflow_path": list(tensorflow.__path__),
                       "parent_pid": os.getpid(), "nice": int(nice)})


def _boot_script() -> str:
    from blade_disc_tf.compiler.remote import boot

    return boot.__file__


class CompileWorker:
    """One compile worker process, (re)started on demand; thread-safe."""

    def __init__(self, nice: int) -> None:
        self.nice = nice
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._ready = False
        self.unavailable: str | None = None  # why the worker cannot be started
        self.starts = 0
        self.stopped = False  # stop() ran: this process is exiting

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def compile(self, request: dict, fdef: bytes, options, op_defs: list[bytes]) -> dict:
        """The reply of service.compile_request, computed by the worker.
        Raises WorkerUnavailable when no worker can be started."""
        from blade_disc_tf.compiler.remote import protocol

        with self._lock:
            if self.stopped:
                return {"ok": False, "error": STOPPED}
            t0 = time.monotonic()
            proc = self._running()
            deadline = t0 + reply_deadline_s(options.timeout_s)
            message = {"request": request, "options": options.to_dict(),
                       "log_level": logging.getLogger("blade_disc_tf.compiler")
                       .getEffectiveLevel()}
            try:
                protocol.write_frame(proc.stdin.fileno(), message, (fdef, *op_defs), deadline)
                if not self._ready:
                    protocol.read_frame(proc.stdout.fileno(), deadline)
                    self._ready = True
                answer, _ = protocol.read_frame(proc.stdout.fileno(), deadline)
                reply = dict(answer["reply"])
            except (OSError, EOFError, TimeoutError, ValueError, KeyError) as e:
                return self._failed(proc, e)
        for name, level, text in answer.get("logs", []):
            logging.getLogger(name).log(level, "%s", text)
        # From the request to the reply: the worker's start-up and the
        # transfers count, as the request waited for them.
        reply["seconds"] = time.monotonic() - t0
        return reply

    def _running(self) -> subprocess.Popen:
        if self.unavailable is not None:
            raise WorkerUnavailable(self.unavailable)
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._discard()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, _boot_script(), _boot_config(self.nice)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        except (OSError, ImportError) as e:
            self.unavailable = f"cannot start the compile worker: {e}"
            raise WorkerUnavailable(self.unavailable) from e
        self._ready = False
        self.starts += 1
        return self._proc

    def _failed(self, proc: subprocess.Popen, error: BaseException) -> dict:
        """The request's error reply; the worker is killed and replaced next time."""
        if self.stopped:
            self._discard()
            return {"ok": False, "error": STOPPED}
        was_ready = self._ready
        _kill(proc)
        code = proc.poll()
        self._discard()
        if isinstance(error, TimeoutError):
            why = "did not answer in time"
        elif code is not None and code < 0:
            why = f"was killed by signal {-code}"
        elif code is not None:
            why = f"exited with status {code}"
        else:
            why = f"failed: {type(error).__name__}: {error}"
        if not was_ready and not isinstance(error, TimeoutError):
            self.unavailable = f"the compile worker {why} while starting"
            raise WorkerUnavailable(self.unavailable)
        return {"ok": False, "error": f"the compile worker {why}"}

    def _discard(self) -> None:
        proc, self._proc, self._ready = self._proc, None, False
        if proc is not None:
            for pipe in (proc.stdin, proc.stdout):
                try:
                    pipe.close()
                except OSError:
                    pass
            proc.wait()

    def stop(self) -> None:
        """Ends the worker (at exit; also while a request is in flight, which
        then fails): SIGTERM, on which it kills its compilers and exits;
        SIGKILL after STOP_GRACE_S.  Takes no lock."""
        self.stopped = True
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        try:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            _kill(proc)
        except OSError:
            pass


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL to the worker (the leader of its own session and group)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        proc.wait()
