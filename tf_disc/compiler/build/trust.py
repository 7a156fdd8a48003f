"""Whether a file or folder of the disk cache may be trusted: ours, and
writable by no one else."""
from __future__ import annotations

import os
import stat


def untrusted_reason(path: str, want_dir: bool) -> str | None:
    """Why `path` must not be trusted, or None when it is ours and safe."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return f"cannot stat {path}: {e.strerror}"
    if want_dir and not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if not want_dir and not stat.S_ISREG(st.st_mode):
        return f"{path} is not a regular file"
    if st.st_uid != os.getuid():
        return f"{path} is owned by uid {st.st_uid}, not {os.getuid()}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{path} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None
