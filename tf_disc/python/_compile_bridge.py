"""The compile callback that the op library calls on its compile thread.

It turns the C request into a call of the Python compiler and writes the JSON
reply back.  No exception may cross into C: anything that goes wrong becomes
an `ok: false` reply, and DiscLaunch falls back to TensorFlow."""
from __future__ import annotations

import atexit
import ctypes
import json
import logging
import sys
from typing import Callable

from . import _library
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


def make_callback(current_options: Callable[[], Options]):
    """A ctypes callback bound to whatever options are current at compile time."""
    from blade_disc_tf.compiler import service  # imported here, not on the compile thread

    def on_compile(request_json, fdef_ptr, fdef_len, reply_ptr, reply_cap):
        request: dict = {}
        try:
            if sys.is_finalizing():  # exiting: don't start a compile
                raise RuntimeError("interpreter is shutting down")
            request = json.loads(request_json.decode())
            fdef = ctypes.string_at(fdef_ptr, fdef_len)
            reply = service.compile_request(request, fdef, _compile_options(current_options()))
        except BaseException as e:  # noqa: BLE001 - nothing may escape into C
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        if reply.get("ok"):
            _log.debug("compiled %s (%s) in %.2fs, from %s", request.get("function"),
                       request.get("key"), reply.get("seconds", 0.0),
                       "compiler" if reply.get("compiled") else "disk cache")
        else:
            _log.warning("blade_disc_tf could not compile %s: %s; running it in TensorFlow",
                         request.get("function", "?"), reply.get("error"))
        data = _encode_reply(reply, int(reply_cap))
        ctypes.memmove(reply_ptr, data, len(data))
        reply_ptr[len(data)] = b"\0"
        return 0

    return _library.COMPILE_CALLBACK(on_compile)


class CompilerRegistration:
    """Registers the ctypes callback and unregisters it at interpreter exit,
    so the compile thread starts no compile in a dying Python.

    The callback object itself is never freed (one leaked reference): the
    compile thread may have read the pointer just before it was cleared, or
    be inside the call, and ctypes reads its thunk again after the Python
    function returns, so freeing it at exit would be a use-after-free."""

    def __init__(self, library: "_library.OpLibrary", current_options: Callable[[], Options]):
        self._library = library
        self._callback = make_callback(current_options)
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(self._callback))
        library.set_compile_callback(self._callback)
        self._registered = True
        atexit.register(self.unregister)

    def unregister(self) -> None:
        if self._registered:
            self._library.set_compile_callback(None)
            self._registered = False
