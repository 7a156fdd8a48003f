"""The runtime headers generated code includes (disc_abi.h and everything
under host/ and cpu/prelude/), and one digest of their bytes: part of the disk
cache key (cache.toolchain_parts), so that a library built against other
headers is never reused."""
from __future__ import annotations

import hashlib
import os

from .command import include_dir

ABI_HEADER = "disc_abi.h"
# Folders of the headers generated code includes: the host helpers (any
# target's host code) and the CPU kernels' prelude.
HEADER_DIRS = ("host", "cpu/prelude")


def runtime_headers(root: str | None = None) -> list[str]:
    """Paths, relative to root (default include_dir()), of every header
    generated code can include, sorted."""
    root = include_dir() if root is None else root
    found = [ABI_HEADER]
    for folder in HEADER_DIRS:
        for dirpath, dirnames, names in os.walk(os.path.join(root, folder)):
            dirnames.sort()
            found += [os.path.relpath(os.path.join(dirpath, n), root)
                      for n in names if n.endswith(".h")]
    return sorted(found)


def files_digest(root: str, rel_paths: list[str]) -> str:
    """sha256 over the files' paths (relative to root) and bytes; an
    unreadable file counts as missing (a compile that needs it fails)."""
    h = hashlib.sha256()
    for rel in rel_paths:
        h.update(rel.encode() + b"\0")
        try:
            with open(os.path.join(root, rel), "rb") as f:
                h.update(f.read())
        except OSError:
            h.update(b"<missing>")
        h.update(b"\0")
    return h.hexdigest()


def headers_digest(root: str | None = None) -> str:
    """files_digest of runtime_headers (root: default include_dir())."""
    root = include_dir() if root is None else root
    return files_digest(root, runtime_headers(root))
