"""Index from a compile request to its library in the disk cache, so that a
process finding the library there skips lowering and code generation.

The library's own key (cache.py) hashes the generated source, so finding it
means running the whole pipeline first: 0.05-0.15 s of Python per cluster
(decode_loop.py's and BERT's) on every process start, holding the GIL while
the first request waits.  This index maps a request key, sha256 of

  - the cluster's FunctionDef bytes (DiscLaunch serializes them
    deterministically) and the request (inputs' dtypes, ranks and constant
    values, as sorted JSON), with the fast-math mode it compiles for,
  - the compiler's fingerprint: every source file of the compiler package,
    so that any change to what generates a library changes every request
    key, and
  - the target and the toolchain (cache.toolchain_parts: commands,
    compiler, and the runtime headers that generated code includes),

to the library key, in <cache_dir>/<request key>.req.  A hit is returned only
through cache.verify_entry (the library's ownership, mode and sha256), and
the index file itself must pass the same ownership and mode checks.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tempfile

from .cache import toolchain_parts, untrusted_reason, verify_entry
from .headers import files_digest

_KEY = re.compile(r"[0-9a-f]{64}")
_COMPILER_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.lru_cache(maxsize=1)
def compiler_fingerprint() -> str:
    """sha256 over the compiler package's Python sources (the runtime
    headers are toolchain_parts')."""
    files = []
    for root, dirs, names in os.walk(_COMPILER_ROOT):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files += [os.path.relpath(os.path.join(root, n), _COMPILER_ROOT)
                  for n in sorted(names) if n.endswith(".py")]
    return files_digest(_COMPILER_ROOT, files)


def request_key(request: dict, fdef: bytes, fast_math: str, target: str, cxx: str,
                extra: tuple, timeout_s: float) -> str:
    h = hashlib.sha256()
    for part in (fdef, json.dumps(request, sort_keys=True).encode(), fast_math.encode(),
                 compiler_fingerprint().encode(),
                 *(p.encode() for p in toolchain_parts(target, cxx, extra, timeout_s))):
        h.update(part)
        h.update(b"\0")
    return h.hexdigest()


def lookup(directory: str, key: str) -> str | None:
    """The trusted cached library the request `key` was built into, or None."""
    path = os.path.join(directory, f"{key}.req")
    if not os.path.lexists(path) or untrusted_reason(path, want_dir=False):
        return None
    try:
        with open(path) as f:
            library_key = f.read().strip()
    except OSError:
        return None
    if not _KEY.fullmatch(library_key):
        return None
    library = os.path.join(directory, f"{library_key}.so")
    if not os.path.lexists(library) or verify_entry(library) is not None:
        return None
    return library


def record(directory: str, key: str, library_key: str) -> None:
    """Best effort (a full or read-only cache only costs the next process a
    lowering): <directory>/<key>.req := library_key, written to a new file
    and renamed into place."""
    try:
        fd, tmp = tempfile.mkstemp(suffix=".req", dir=directory, prefix=f".{key[:16]}-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w") as f:
            f.write(library_key + "\n")
        os.chmod(tmp, 0o600)
        os.rename(tmp, os.path.join(directory, f"{key}.req"))
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
