"""Escaping of graph strings (node names, messages) placed in C++ source."""
from __future__ import annotations


def c_string(s: str) -> str:
    """A C string literal for s (UTF-8 bytes; no trigraphs, no raw newlines)."""
    out = []
    for byte in s.encode("utf-8"):
        ch = chr(byte)
        if ch in '\\"?':
            out.append("\\" + ch)
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def c_comment(s: str) -> str:
    """Text safe inside a /* */ comment (one line)."""
    return "".join(c if 32 <= ord(c) < 127 else "?" for c in s).replace("*/", "* /")
