"""The pass-to-codegen contract: the attributes passes leave on top-level
ops for code generation, each with its type and the cross-op facts codegen
relies on, checked by the verifier wherever they appear.

  fusion "kernel": int, unique among fusions (a kernel's name)
  fusion/stitch/library "buffers": one "out:<k>" (func.rets[k] is that
      result) or "temp" per result (passes/buffers.py)
  "frees": names of temps written by earlier ops, each freed once
  dot "epilogue": the kernel id of the one fusion after it whose
      "epilogue_of" names the dot's result (passes/gemm_epilogue.py)
  dot "gemm_group": [group, index, size]: a group's dots in index order
      0..size-1 (passes/merge_gemm.py)"""
from __future__ import annotations

import re

from .core import Func, Op

_OUT = re.compile(r"out:(\d+)")


class ContractError(ValueError):
    """An op's codegen attributes break the contract; the message names it."""


def _where(op: Op) -> str:
    return f"{op.name} -> {[r.name for r in op.results]}"


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def check_contract(func: Func) -> None:
    """Raises ContractError at the first op whose attributes break it."""
    kernels: set[int] = set()
    temps: set[str] = set()
    freed: set[str] = set()
    dots: dict[str, Op] = {}          # dot result name -> dot awaiting its epilogue
    groups: dict[int, tuple[int, int]] = {}   # group -> (next index, size)
    for op in func.ops:
        a = op.attrs
        if op.name == "fusion" and "kernel" in a:
            if not _is_int(a["kernel"]) or a["kernel"] in kernels:
                raise ContractError(f"{_where(op)}: kernel id {a['kernel']!r} not a new int")
            kernels.add(a["kernel"])
        if "buffers" in a:
            _check_buffers(func, op, temps)
        for name in a.get("frees", []):
            if name not in temps or name in freed:
                raise ContractError(f"{_where(op)}: frees {name}, not a live temp")
            freed.add(name)
        if op.name == "dot" and "epilogue" in a:
            dots[op.result.name] = op
        if "epilogue_of" in a:
            dot = dots.pop(a["epilogue_of"], None)
            if op.name != "fusion" or dot is None or dot.attrs["epilogue"] != a.get("kernel"):
                raise ContractError(f"{_where(op)}: epilogue_of {a['epilogue_of']!r} names "
                                    "no earlier dot waiting for this kernel")
        if "gemm_group" in a:
            _check_group(op, groups)
    if dots:
        raise ContractError(f"dot {sorted(dots)} has an epilogue kernel that never follows")
    unfinished = [g for g, (i, size) in groups.items() if i != size]
    if unfinished:
        raise ContractError(f"gemm_group {unfinished} has missing members")


def _check_buffers(func: Func, op: Op, temps: set[str]) -> None:
    bufs = op.attrs["buffers"]
    if not isinstance(bufs, list) or len(bufs) != len(op.results):
        raise ContractError(f"{_where(op)}: buffers {bufs!r}, want one per result")
    for r, b in zip(op.results, bufs):
        m = _OUT.fullmatch(b) if isinstance(b, str) else None
        if b == "temp":
            temps.add(r.name)
        elif m is None or int(m.group(1)) >= len(func.rets) or func.rets[int(m.group(1))] != r:
            raise ContractError(f"{_where(op)}: buffer {b!r} of %{r.name} is not its output")


def _check_group(op: Op, groups: dict[int, tuple[int, int]]) -> None:
    g = op.attrs["gemm_group"]
    ok = op.name == "dot" and isinstance(g, list) and len(g) == 3 and all(map(_is_int, g))
    if ok:
        gid, index, size = g
        want, want_size = groups.get(gid, (0, size))
        ok = 0 <= index < size and index == want and size == want_size
    if not ok:
        raise ContractError(f"{_where(op)}: gemm_group {g!r} out of order or malformed")
    groups[gid] = (index + 1, size)
