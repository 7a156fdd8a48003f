"""The runtime ABI version generated code is written against, read from
runtime/disc_abi.h.  generate_source() writes it into every source as a
static_assert, so it is part of the disk-cache key (sha256 of the source):
libraries built for another ABI are never reused, and a header that does not
match fails at compile time instead of at load time."""
from __future__ import annotations

import functools
import os
import re

from ..build.command import include_dir


@functools.lru_cache(maxsize=1)
def abi_version() -> int:
    path = os.path.join(include_dir(), "disc_abi.h")
    with open(path) as f:
        m = re.search(r"^#define DISC_ABI_VERSION (\d+)$", f.read(), re.M)
    if not m:
        raise RuntimeError(f"no DISC_ABI_VERSION in {path}")
    return int(m.group(1))


def abi_guard() -> str:
    v = abi_version()
    return (f"static_assert(DISC_ABI_VERSION == {v}, \"generated for DiscRuntime ABI "
            f"version {v}\");")
