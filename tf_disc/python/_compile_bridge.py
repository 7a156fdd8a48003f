"""The compile callback that the op library calls on its compile thread.

It turns the C request into a call of the Python compiler and writes the JSON
reply back.  No exception may cross into C: anything that goes wrong becomes
an `ok: false` reply, and DiscLaunch falls back to TensorFlow.

A synchronous compile runs in this process (every call waits for it; the
worker's start-up would only add to it).  An asynchronous one runs in the
compile worker (_compile_worker.py), so that lowering, passes and code
generation do not hold this process's GIL while its calls run in TF; a
request the disk cache's index answers is answered here, without it."""
from __future__ import annotations

import atexit
import ctypes
import json
import logging
import sys
from typing import Callable

from . import _compile_worker, _library
from .config import Options

_log = logging.getLogger("blade_disc_tf")


def _compile_options(options: Options):
    from blade_disc_tf.compiler.options import CompileOptions

    return CompileOptions(cache_dir=options.cache_dir, dump_dir=options.dump_dir,
                          cxx=options.cxx, forbid_compile=options.forbid_compile,
                          timeout_s=options.compile_timeout_s, fast_math=options.fast_math,
                          target_isa=options.target_isa, background=options.async_compile)


def _encode_reply(reply: dict, cap: int) -> bytes:
    data = json.dumps(reply).encode()
    if len(data) < cap:
        return data
    short = {"ok": False, "error": str(reply.get("error", "reply too long"))[: max(0, cap // 2)]}
    return json.dumps(short).encode()[: cap - 1]


def compile_request(request: dict, fdef: bytes, options, worker: _compile_worker.CompileWorker
                    ) -> dict:
    """The compiler's reply to one request: in the worker for a background
    compile the request index does not answer, else in this process."""
    from blade_disc_tf.compiler import service
    from blade_disc_tf.compiler.frontend.tf_protos import op_defs_for

    if options.background and worker.unavailable is None:
        hit = service.indexed_reply(request, fdef, options)
        if hit is not None:
            return hit
        try:
            return worker.compile(request, fdef, options, op_defs_for(fdef))
        except _compile_worker.WorkerUnavailable as e:
            _log.warning("blade_disc_tf compiles in this process: %s", e)
    return service.compile_request(request, fdef, options)


def make_callback(current_options: Callable[[], Options],
                  worker: _compile_worker.CompileWorker):
    """A ctypes callback bound to whatever options are current at compile time."""
    from blade_disc_tf.compiler import service  # noqa: F401 - imported here, not on the compile thread

    def on_compile(request_json, fdef_ptr, fdef_len, reply_ptr, reply_cap):
        request: dict = {}
        try:
            if sys.is_finalizing():  # exiting: don't start a compile
                raise RuntimeError("interpreter is shutting down")
            request = json.loads(request_json.decode())
            fdef = ctypes.string_at(fdef_ptr, fdef_len)
            reply = compile_request(request, fdef, _compile_options(current_options()), worker)
        except BaseException as e:  # noqa: BLE001 - nothing may escape into C
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        if reply.get("ok"):
            _log.debug("compiled %s (%s) in %.2fs, from %s", request.get("function"),
                       request.get("key"), reply.get("seconds", 0.0),
                       "compiler" if reply.get("compiled") else "disk cache")
        elif not worker.stopped:
            _log.warning("blade_disc_tf could not compile %s: %s; running it in TensorFlow",
                         request.get("function", "?"), reply.get("error"))
        data = _encode_reply(reply, int(reply_cap))
        ctypes.memmove(reply_ptr, data, len(data))
        reply_ptr[len(data)] = b"\0"
        return 0

    return _library.COMPILE_CALLBACK(on_compile)


class CompilerRegistration:
    """Registers the ctypes callback and unregisters it at interpreter exit,
    so the compile thread starts no compile in a dying Python, and stops the
    compile worker then.

    The callback object itself is never freed (one leaked reference): the
    compile thread may have read the pointer just before it was cleared, or
    be inside the call, and ctypes reads its thunk again after the Python
    function returns, so freeing it at exit would be a use-after-free."""

    def __init__(self, library: "_library.OpLibrary", current_options: Callable[[], Options]):
        from blade_disc_tf.compiler.service import BACKGROUND_NICE

        self._library = library
        self.worker = _compile_worker.CompileWorker(BACKGROUND_NICE)
        self._callback = make_callback(current_options, self.worker)
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(self._callback))
        library.set_compile_callback(self._callback)
        self._registered = True
        atexit.register(self.unregister)

    def unregister(self) -> None:
        if self._registered:
            self._library.set_compile_callback(None)
            self._registered = False
        self.worker.stop()
