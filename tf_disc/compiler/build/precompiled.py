"""A precompiled prelude header in the disk cache, so that each translation
unit of a generated library skips parsing the prelude and the C++ standard
headers it pulls in (<cmath> and friends: most of a small unit's parse time).

GCC looks for `<dir>/<header>.gch` before `<header>` in every include folder
and uses it only when it is valid for the command's flags; otherwise it reads
the header as usual, so the generated code is the same either way and a
missing, stale or foreign .gch costs nothing but the parse.  The .gch lives
in <cache_dir>/pch/<key>/, key = sha256 of the object command line (target
flags included), the compiler's identity, the runtime headers' bytes
(headers.headers_digest) and the header's name.

A build never waits for it: a build that found none starts one when it is
done, in the background at PCH_NICE (one per key per process), so it never
competes with the build itself; later builds (other clusters, later
processes sharing the cache) use it.
"""
from __future__ import annotations

import atexit
import hashlib
import logging
import os
import tempfile
import threading

from .. import __version__
from .command import compiler_identity, include_dir, object_command
from .headers import headers_digest
from .process import kill_groups, run_compiler
from .trust import untrusted_reason

log = logging.getLogger("blade_disc_tf.compiler")

PCH_FOLDER = "pch"
# Never waited on: it runs behind everything, compiles included.
PCH_NICE = 19

_lock = threading.Lock()
_started: set = set()      # keys whose build this process started
_ready: dict = {}          # key -> a folder holding its valid .gch
_running: set = set()      # process groups of builds in flight
_temps: set = set()        # their output files, not yet renamed into place


@atexit.register
def _stop_builds() -> None:
    """A background build must not outlive its process, nor leave its temp."""
    kill_groups(_running)
    for path in list(_temps):
        _remove(path)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def pch_key(cxx: str, extra: tuple, header: str, timeout_s: float = 30.0) -> str:
    h = hashlib.sha256()
    for part in (" ".join(object_command(cxx, "SRC", "OUT", extra)), header,
                 compiler_identity(cxx, timeout_s), headers_digest(), __version__):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:32]


def pch_command(cxx: str, extra: tuple, header: str, out: str) -> list[str]:
    """The header precompiled with exactly the flags of the units that use it
    (object_command; -shared of a one-unit build does not affect validity)."""
    cmd = object_command(cxx, "SRC", out, extra)
    at = cmd.index("SRC")
    return cmd[:at] + ["-x", "c++-header", os.path.join(include_dir(), header)] + cmd[at + 1:]


def _gch_path(root: str, header: str) -> str:
    return os.path.join(root, header + ".gch")


def _usable(root: str, header: str) -> bool:
    return untrusted_reason(_gch_path(root, header), want_dir=False) is None


def ready_flags(directory: str, cxx: str, extra: tuple, header: str | None,
                timeout_s: float) -> tuple[str, ...]:
    """("-I", folder of the .gch) to put before the runtime's include folder
    when a precompiled `header` is ready for these flags, else ()."""
    if not header:
        return ()
    key = pch_key(cxx, extra, header, timeout_s)
    with _lock:
        known = _ready.get(key)
    for root in (os.path.join(directory, PCH_FOLDER, key), known):
        if root and _usable(root, header):
            with _lock:
                _ready[key] = root
            return ("-I", root)
    return ()


def build_in_background(directory: str, cxx: str, extra: tuple, header: str | None,
                        timeout_s: float) -> None:
    """Starts building the precompiled `header` for these flags in
    <directory>/pch/ unless this process started it already (the caller
    found none ready: ready_flags)."""
    if not header:
        return
    key = pch_key(cxx, extra, header, timeout_s)
    with _lock:
        if key in _started:
            return
        _started.add(key)
    root = os.path.join(directory, PCH_FOLDER, key)
    threading.Thread(target=_build, args=(key, root, cxx, extra, header, timeout_s),
                     name="disc-pch", daemon=True).start()


def _build(key: str, root: str, cxx: str, extra: tuple, header: str, timeout_s: float) -> None:
    """Builds <root>/<header>.gch through a temp file renamed into place (a
    concurrent build in another process renames the same bytes)."""
    gch = _gch_path(root, header)
    tmp = None
    try:
        os.makedirs(os.path.dirname(gch), mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".gch", dir=os.path.dirname(gch), prefix=".pch-")
        os.close(fd)
        _temps.add(tmp)
        proc = run_compiler(pch_command(cxx, extra, header, tmp), timeout_s, PCH_NICE, _running)
        if proc.returncode != 0:
            log.info("precompiled header not built: %s", proc.stderr.strip()[:300])
            return
        os.chmod(tmp, 0o600)
        _link_header(root, header)
        os.rename(tmp, gch)
        _temps.discard(tmp)
        tmp = None
        with _lock:
            _ready[key] = root
        log.info("precompiled header %s built", gch)
    except Exception as e:  # noqa: BLE001 - an optimization only: never fail a build
        log.info("precompiled header not built: %s", e)
    finally:
        if tmp:
            _remove(tmp)
            _temps.discard(tmp)


def _link_header(root: str, header: str) -> None:
    """<root>/<header> -> the real header, in place before the .gch is: GCC
    knows a precompiled header by the folder it took the .gch from, so a
    second #include of it (a runtime header including the prelude) opens the
    header there, where its include guard makes it a no-op."""
    link = os.path.join(root, header)
    if os.path.islink(link):
        return
    tmp = link + f".{os.getpid()}.{threading.get_ident()}"
    os.symlink(os.path.join(include_dir(), header), tmp)
    os.replace(tmp, link)


def wait_for_builds(timeout_s: float = 60.0) -> None:
    """Joins this process's running header builds (tests, benchmarks)."""
    for thread in [t for t in threading.enumerate() if t.name == "disc-pch"]:
        thread.join(timeout_s)
