"""Background compiles yield the CPUs to the requests they run beside.

With async_compile the caller runs its requests in TF while the system
compiler builds the cluster; on a machine with few cores the compiler (one
cc1plus per translation unit) competes with TF's intra-op threads and made
those requests up to 1.9x slower than stock TF.  A compile at a lower
scheduling priority (nice) takes the CPU time TF leaves idle instead."""
from __future__ import annotations

import logging
import os
import threading
from typing import Callable, TypeVar

T = TypeVar("T")
BACKGROUND_NICE = 10  # CFS weight 110 vs 1024: ~10% of a core TF also wants

log = logging.getLogger("blade_disc_tf.compiler")


def at_low_priority(fn: Callable[[], T]) -> T:
    """fn() on a new thread whose nice value is BACKGROUND_NICE higher.

    Linux keeps a nice value per thread and a process or thread inherits its
    creator's, so the compilers fn starts run at that priority too.  A new
    thread, because a thread cannot lower its nice value back without
    privilege (the compile thread stays at normal priority for synchronous
    compiles).  Where priorities are not per thread or cannot be changed, fn
    runs as it is."""
    box: dict = {}

    def run() -> None:
        try:
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid)
                           + BACKGROUND_NICE)
        except (AttributeError, OSError) as e:
            log.debug("background compile keeps its priority: %s", e)
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread
            box["error"] = e

    worker = threading.Thread(target=run, name="disc-background-compile", daemon=True)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]
