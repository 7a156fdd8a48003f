"""Disk cache of compiled libraries.

key = sha256(source, full command template, compiler identity, our version).
Files live in cache_dir (mode 0700) as <key>.so.  A build writes a temp file
and os.rename()s it into place (a loaded .so is never overwritten), under a
per-key fcntl lock so concurrent processes compile once.
"""
from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import subprocess
import tempfile
import time

from .. import __version__
from ..errors import CompileError
from .command import compile_command, compiler_identity

log = logging.getLogger("blade_disc_tf.compiler")


def cache_key(source: str, cxx: str, extra: tuple) -> str:
    h = hashlib.sha256()
    for part in (source, " ".join(compile_command(cxx, "SRC", "OUT", extra)),
                 compiler_identity(cxx), __version__):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def build(source: str, cache_dir: str, cxx: str, extra: tuple, forbid_compile: bool,
          timeout_s: float, log_path: str | None = None) -> tuple[str, bool, str]:
    """Returns (library path, compiled?, key)."""
    key = cache_key(source, cxx, extra)
    os.makedirs(cache_dir, mode=0o700, exist_ok=True)
    path = os.path.join(cache_dir, f"{key}.so")
    if os.path.exists(path):
        return path, False, key
    lock_path = os.path.join(cache_dir, f"{key}.lock")
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(path):  # another process built it meanwhile
            return path, False, key
        if forbid_compile:
            raise CompileError(f"compile forbidden (forbid_compile) and {key[:12]} not cached")
        fd, src_path = tempfile.mkstemp(suffix=".cc", dir=cache_dir, prefix=f".{key[:16]}-")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        tmp_so = src_path[:-3] + ".so"
        cmd = compile_command(cxx, src_path, tmp_so, extra)
        t0 = time.monotonic()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise CompileError(f"C++ compiler timed out after {timeout_s}s") from None
        except OSError as e:
            raise CompileError(f"cannot run C++ compiler {cxx!r}: {e}") from None
        finally:
            os.unlink(src_path)
        text = f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}exit {proc.returncode} " \
               f"in {time.monotonic() - t0:.2f}s\n"
        if log_path:
            with open(log_path, "w") as f:
                f.write(text)
        if proc.returncode != 0:
            if os.path.exists(tmp_so):
                os.unlink(tmp_so)
            first = next((ln for ln in proc.stderr.splitlines() if "error" in ln),
                         proc.stderr.strip()[:200])
            raise CompileError(f"C++ compile failed: {first}")
        os.chmod(tmp_so, 0o700)
        os.rename(tmp_so, path)
        log.info("compiled %s in %.2fs", path, time.monotonic() - t0)
        return path, True, key
