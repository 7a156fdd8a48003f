"""Frames between a TF process and its compile worker, over pipes.

A frame is a header (JSON length, payload length: two little-endian u64),
the JSON object, then the payload: byte strings whose lengths the object
lists under "sizes" (a request's FunctionDef and the OpDefs it uses).
Reads and writes wait at most until a deadline (time.monotonic()), so a
worker that stops answering cannot block its requester."""
from __future__ import annotations

import json
import os
import select
import struct
import time

HEADER = struct.Struct("<QQ")
CHUNK = 1 << 20


def _wait(fd: int, event: int, deadline: float | None) -> None:
    if deadline is None:
        return
    poller = select.poll()
    poller.register(fd, event)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no answer before the deadline")
        if poller.poll(max(1, int(left * 1000))):
            return


def _write_all(fd: int, data: bytes, deadline: float | None) -> None:
    view = memoryview(data)
    while view:
        _wait(fd, select.POLLOUT, deadline)
        view = view[os.write(fd, view[:CHUNK]):]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    parts, left = [], n
    while left:
        _wait(fd, select.POLLIN, deadline)
        chunk = os.read(fd, min(left, CHUNK))
        if not chunk:
            raise EOFError("the other side closed the pipe")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def write_frame(fd: int, message: dict, parts: tuple = (),
                deadline: float | None = None) -> None:
    """Writes `message` (JSON-able, no "sizes" key) and the byte strings `parts`."""
    body = json.dumps({**message, "sizes": [len(p) for p in parts]}).encode()
    _write_all(fd, HEADER.pack(len(body), sum(len(p) for p in parts)) + body, deadline)
    for part in parts:
        _write_all(fd, part, deadline)


def read_frame(fd: int, deadline: float | None = None) -> tuple[dict, list[bytes]]:
    """(message, parts) of the next frame; EOFError when the writer is gone,
    TimeoutError past the deadline."""
    body_len, payload_len = HEADER.unpack(_read_exact(fd, HEADER.size, deadline))
    message = json.loads(_read_exact(fd, body_len, deadline))
    payload = _read_exact(fd, payload_len, deadline)
    parts, at = [], 0
    for size in message.pop("sizes"):
        parts.append(payload[at:at + size])
        at += size
    return message, parts
