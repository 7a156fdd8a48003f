"""The compile worker's loop: one request at a time, from its parent, each
compiled by service.compile_request; its log records go back with the reply
(the parent logs them).  The worker exits when its parent is gone (the
request pipe closes, or the worker is re-parented) or on SIGTERM (its
parent's exit), killing the system compilers it started."""
from __future__ import annotations

import logging
import os
import queue
import signal
import threading
import time

from ..build.process import kill_running
from ..frontend.tf_protos import sent_op_defs
from ..options import CompileOptions
from ..service import compile_request
from . import protocol

PARENT_POLL_S = 0.5


class _Records(logging.Handler):
    """Collects the compiler's log records of one request."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append([record.name, record.levelno, self.format(record)])


def _exit_now() -> None:
    kill_running()
    os._exit(0)


def _read_requests(fd: int, inbox: queue.Queue) -> None:
    try:
        while True:
            inbox.put(protocol.read_frame(fd))
    except BaseException:  # noqa: BLE001 - EOF or a broken pipe: the parent is gone
        _exit_now()


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_S)
    _exit_now()


def handle(message: dict, parts: list[bytes], records: _Records) -> dict:
    """One request (a frame's message and parts) -> the reply frame's message."""
    logger = logging.getLogger("blade_disc_tf")
    logger.setLevel(int(message.get("log_level", logging.WARNING)))
    records.records = []
    try:
        fdef, op_defs = parts[0], parts[1:]
        options = CompileOptions.from_dict(message["options"])
        with sent_op_defs(op_defs):
            reply = compile_request(message["request"], fdef, options)
    except BaseException as e:  # noqa: BLE001 - every request gets a reply
        reply = {"ok": False, "error": f"compile worker: {type(e).__name__}: {e}"}
    return {"reply": reply, "logs": records.records}


def serve(requests_fd: int, replies_fd: int, parent_pid: int) -> None:
    """Answers requests until the parent goes away (never returns)."""
    signal.signal(signal.SIGTERM, lambda *_: _exit_now())
    records = _Records()
    logger = logging.getLogger("blade_disc_tf")
    logger.addHandler(records)
    logger.propagate = False
    inbox: queue.Queue = queue.Queue()
    threading.Thread(target=_read_requests, args=(requests_fd, inbox), daemon=True,
                     name="disc-worker-requests").start()
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True,
                     name="disc-worker-parent").start()
    protocol.write_frame(replies_fd, {"ready": True, "pid": os.getpid()})
    while True:
        message, parts = inbox.get()
        protocol.write_frame(replies_fd, handle(message, parts, records))
