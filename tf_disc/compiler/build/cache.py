"""Disk cache of compiled libraries.

key = sha256(the library's one-unit source, the target's identity, full
command templates, compiler identity, the bytes of the runtime headers it
includes (headers.py), our version): the same whether it is built as one
translation unit or split into several (a split that follows CPU load must
not miss the cache).
Files live in cache_dir (mode 0700) as <key>.so, each with a sidecar
<key>.so.sha256 holding the sha256 of the library's bytes (the index entry).
A build writes temp files and os.rename()s them into place (a loaded .so is
never overwritten), under a per-key fcntl lock so concurrent processes
compile once.

Trust: a library is only returned (and so dlopen'ed) when
  - the cache directory is a real directory owned by this uid with no group or
    other write bits (a user-given cache_dir is held to the same rule),
  - the .so and its sidecar are regular files owned by this uid with no group
    or other write bits, and
  - the .so's sha256 equals its sidecar.
Otherwise the entry is refused (logged with the reason) and rebuilt.  When the
cache directory cannot be trusted or written (read-only, full, someone else's),
libraries are built in a private 0700 temp directory of this process instead.
"""
from __future__ import annotations

import atexit
import errno
import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

from .. import __version__
from ..errors import CompileError
from .command import compile_command, compiler_identity, link_command, object_command
from .headers import headers_digest
from .precompiled import build_in_background, ready_flags
from .process import run_compiler
from .trust import untrusted_reason

log = logging.getLogger("blade_disc_tf.compiler")

_private_lock = threading.Lock()
_private_dir: str | None = None
_warned: set = set()


def toolchain_parts(target: str, cxx: str, extra: tuple, timeout_s: float = 30.0) -> list[str]:
    """What besides the source decides the built library: the target's
    identity (target/base.py cache_identity), the full command templates,
    the compiler's identity (version, CPU flags), the runtime headers the
    source includes (their bytes) and our version."""
    commands = [compile_command(cxx, "SRC", "OUT", extra),
                object_command(cxx, "SRC", "OUT", extra),
                link_command(cxx, ["OBJ"], "OUT", extra)]
    return [target, *(" ".join(c) for c in commands), compiler_identity(cxx, timeout_s),
            headers_digest(), __version__]


def cache_key(source: str, target: str, cxx: str, extra: tuple, timeout_s: float = 30.0) -> str:
    """source: the library as one translation unit; target: its identity."""
    h = hashlib.sha256()
    for part in (source, *toolchain_parts(target, cxx, extra, timeout_s)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _warn_once(msg: str) -> None:
    if msg not in _warned:
        _warned.add(msg)
        log.warning("%s", msg)


def file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify_entry(path: str) -> str | None:
    """None when <path> (a cached .so) may be loaded, else why not."""
    sidecar = path + ".sha256"
    for p in (path, sidecar):
        reason = untrusted_reason(p, want_dir=False)
        if reason:
            return reason
    try:
        with open(sidecar) as f:
            want = f.read().strip()
        got = file_sha256(path)
    except OSError as e:
        return f"cannot read {path}: {e.strerror}"
    if got != want:
        return f"{path}: sha256 {got[:12]} does not match its index entry {want[:12]}"
    return None


def private_dir() -> str:
    """This process's own 0700 temp directory (removed at exit)."""
    global _private_dir
    with _private_lock:
        if _private_dir is None or not os.path.isdir(_private_dir):
            _private_dir = tempfile.mkdtemp(prefix=f"blade_disc_tf-{os.getuid()}-")
            atexit.register(shutil.rmtree, _private_dir, True)
        return _private_dir


def usable_cache_dir(cache_dir: str) -> tuple[str, str | None]:
    """(directory to use, reason it is not cache_dir or None)."""
    try:
        os.makedirs(cache_dir, mode=0o700, exist_ok=True)
    except OSError as e:
        return private_dir(), f"cannot create cache dir {cache_dir}: {e.strerror}"
    reason = untrusted_reason(cache_dir, want_dir=True)
    if reason:
        return private_dir(), f"untrusted cache dir: {reason}"
    return cache_dir, None


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


@dataclass(frozen=True)
class _Run:
    """How one build runs the system compiler: which one, its extra flags,
    the time limit of the whole build, and its CPU priority (nice > 0:
    lowered, for a compile in the background of running requests)."""
    cxx: str
    extra: tuple
    timeout_s: float
    nice: int
    # A target's own build (target/base.py Target.library_builder):
    # builder(sources, out_so, workdir, run) with run(commands) running
    # commands at once, raising CompileError on failure; None: the C++ build.
    builder: Callable | None = None


def _run_all(cmds: list[list[str]], timeout_s: float,
             nice: int) -> list[subprocess.CompletedProcess]:
    """Runs the commands at the same time (one compiler per translation unit)."""
    if len(cmds) == 1:
        return [run_compiler(cmds[0], timeout_s, nice)]
    with ThreadPoolExecutor(len(cmds)) as pool:
        futures = [pool.submit(run_compiler, c, timeout_s, nice) for c in cmds]
        return [f.result() for f in futures]


def _check(procs: list[subprocess.CompletedProcess], t0: float,
           log: list[str]) -> None:
    for proc in procs:
        log.append(f"$ {' '.join(proc.args)}\n{proc.stdout}{proc.stderr}exit {proc.returncode} "
                   f"in {time.monotonic() - t0:.2f}s\n")
    failed = next((p for p in procs if p.returncode != 0), None)
    if failed is not None:
        first = next((ln for ln in failed.stderr.splitlines() if "error" in ln),
                     failed.stderr.strip()[:200])
        raise CompileError(f"C++ compile failed: {first}")


def _compile(sources: list[str], tmp_so: str, directory: str, key: str, run: _Run,
             log: list[str], temps: list[str]) -> None:
    """sources -> tmp_so: one command for one unit; else the units compiled
    to objects in parallel, then linked."""
    cxx, extra = run.cxx, run.extra
    if run.builder is not None:
        _target_build(sources, tmp_so, directory, key, run, log)
        return
    srcs = []
    for text in sources:
        fd, path = tempfile.mkstemp(suffix=".cc", dir=directory, prefix=f".{key[:16]}-")
        temps.append(path)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        srcs.append(path)
    t0 = time.monotonic()
    try:
        if len(srcs) == 1:
            _check(_run_all([compile_command(cxx, srcs[0], tmp_so, extra)], run.timeout_s,
                            run.nice), t0, log)
            return
        objs = [p[:-3] + ".o" for p in srcs]
        temps += objs
        _check(_run_all([object_command(cxx, s, o, extra) for s, o in zip(srcs, objs)],
                        run.timeout_s, run.nice), t0, log)
        left = max(0.1, run.timeout_s - (time.monotonic() - t0))
        _check(_run_all([link_command(cxx, objs, tmp_so, extra)], left, run.nice), t0, log)
    except subprocess.TimeoutExpired:
        raise CompileError(f"C++ compiler timed out after {run.timeout_s:g}s") from None
    except OSError as e:
        raise CompileError(f"cannot run C++ compiler {cxx!r}: {e.strerror or e}") from None


def _target_build(sources: list[str], tmp_so: str, directory: str, key: str, run: _Run,
                  log: list[str]) -> None:
    """sources -> tmp_so by the target's builder, in a scratch folder."""
    t0 = time.monotonic()
    workdir = tempfile.mkdtemp(dir=directory, prefix=f".{key[:16]}-")

    def commands(cmds: list[list[str]]) -> None:
        left = max(0.1, run.timeout_s - (time.monotonic() - t0))
        _check(_run_all(cmds, left, run.nice), t0, log)
    try:
        run.builder(sources, tmp_so, workdir, commands)
    except subprocess.TimeoutExpired:
        raise CompileError(f"compiler timed out after {run.timeout_s:g}s") from None
    except OSError as e:
        raise CompileError(f"cannot run the compiler: {e.strerror or e}") from None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _compile_into(directory: str, key: str, sources: list[str], run: _Run,
                  log_path: str | None) -> str:
    path = os.path.join(directory, f"{key}.so")
    fd, tmp_so = tempfile.mkstemp(suffix=".so", dir=directory, prefix=f".{key[:16]}-")
    os.close(fd)
    temps = [tmp_so]
    log_lines: list[str] = []
    t0 = time.monotonic()
    try:
        try:
            _compile(sources, tmp_so, directory, key, run, log_lines, temps)
        finally:
            if log_path:
                with open(log_path, "w") as f:
                    f.write("".join(log_lines))
        os.chmod(tmp_so, 0o700)
        digest = file_sha256(tmp_so)
        sfd, tmp_sidecar = tempfile.mkstemp(suffix=".sha256", dir=directory,
                                            prefix=f".{key[:16]}-")
        with os.fdopen(sfd, "w") as f:
            f.write(digest + "\n")
        os.chmod(tmp_sidecar, 0o600)
        # Sidecar first: a .so without a matching sidecar is never trusted.
        os.rename(tmp_sidecar, path + ".sha256")
        os.rename(tmp_so, path)
        log.info("compiled %s in %.2fs (%d unit(s))", path, time.monotonic() - t0, len(sources))
        return path
    finally:
        for p in temps:
            _remove(p)


def _build_in(directory: str, key: str, sources: list[str], run: _Run, forbid_compile: bool,
              log_path: str | None) -> tuple[str, bool]:
    path = os.path.join(directory, f"{key}.so")
    if os.path.lexists(path):
        bad = verify_entry(path)
        if bad is None:
            return path, False
        _warn_once(f"blade_disc_tf: refusing cached library ({bad}); rebuilding")
    lock_path = os.path.join(directory, f"{key}.lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "r+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.lexists(path):  # another process built (or re-built) it meanwhile
            if verify_entry(path) is None:
                return path, False
            _remove(path)
            _remove(path + ".sha256")
        if forbid_compile:
            raise CompileError(f"compile forbidden (forbid_compile) and {key[:12]} not cached")
        return _compile_into(directory, key, sources, run, log_path), True


def build(sources: list[str], cache_dir: str, cxx: str, extra: tuple, forbid_compile: bool,
          timeout_s: float, log_path: str | None = None,
          key_source: str | None = None, nice: int = 0,
          target: str = "target=cpu", prelude: str | None = None,
          builder: Callable | None = None) -> tuple[str, bool, str]:
    """sources: the translation units of one library (several are compiled
    in parallel and linked); key_source: the same library as one unit, the
    cache key (default: the units joined); nice > 0: the compiler runs at
    lower CPU priority (a compile in the background of running requests);
    target: the target's identity, in the key; prelude: the header every
    unit includes first, precompiled when ready (precompiled.py; not in the
    key: the code is the same); builder: the target's own build
    (_Run.builder), else the C++ one.  Returns (library path, compiled?,
    key)."""
    key = cache_key("\n".join(sources) if key_source is None else key_source, target, cxx,
                    extra, timeout_s)
    run = _Run(cxx, extra, timeout_s, nice, builder)
    directory, why = usable_cache_dir(cache_dir)
    if why is None:
        pch = ready_flags(directory, cxx, extra, prelude, timeout_s)
        try:
            path, compiled = _build_in(directory, key, sources,
                                       _Run(cxx, extra + pch, timeout_s, nice, builder),
                                       forbid_compile, log_path)
            if compiled and not pch:
                build_in_background(directory, cxx, extra, prelude, timeout_s)
            return path, compiled, key
        except OSError as e:
            # Read-only or full cache dir: retry in this process's own dir.
            why = f"cannot write cache dir {cache_dir}: {e.strerror or e}"
    _warn_once(f"blade_disc_tf: {why}; using private dir {private_dir()} instead")
    try:
        path, compiled = _build_in(private_dir(), key, sources, run, forbid_compile, log_path)
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise CompileError(f"no space left for the compiled library: {e}") from None
        raise CompileError(f"cannot write compiled library: {e}") from None
    return path, compiled, key
