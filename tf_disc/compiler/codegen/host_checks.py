"""The host's once-per-call checks and allocations, as calls to the helpers
of runtime/host/disc_host.h: disc_entry is one long straight-line function,
and inline checks would be most of its text and of its compile time."""
from __future__ import annotations

from typing import List

from ..ir.core import Op
from .cstr import c_string


def input_check(i: int, rank: int, want: List[str] | None, msg: str) -> List[str]:
    """Lines checking input i's rank and (want, "-1" for any) static dims."""
    if want is None:
        return [f"  if (disc_check_input(rt, inputs, {i}, {rank}, nullptr, \"\")) return 1;"]
    return [f"  {{ static const int64_t w[{len(want)}] = {{{', '.join(want)}}};",
            f"    if (disc_check_input(rt, inputs, {i}, {rank}, w, {c_string(msg)})) return 1; }}"]


def alloc_output(name: str, ctype: str, index: int, dims: List[str]) -> List[str]:
    """`ctype* name`: output `index` of dims (its count checked)."""
    arr = f"od_{name}"
    return [f"  const int64_t {arr}[{max(len(dims), 1)}] = {{{', '.join(dims) or '0'}}};",
            f"  {ctype}* {name};",
            f"  if (disc_output(rt, {index}, {arr}, {len(dims)}, &{name})) return 1;"]


def free_temps(*ops: Op) -> List[str]:
    """Frees the temps the ops are the last readers of (attr "frees",
    passes/buffers.py)."""
    return [f"    if ({name}) rt->free_temp(rt->ctx, {name});"
            for op in ops for name in op.attrs.get("frees", [])]


def alloc_temp(name: str, ctype: str, dims: List[str]) -> List[str]:
    """`ctype* name`: scratch of dims (count and bytes checked; null when empty)."""
    return [f"  {ctype}* {name};",
            f"  {{ const int64_t sd[{max(len(dims), 1)}] = {{{', '.join(dims) or '0'}}};",
            f"    if (disc_temp(rt, sd, {len(dims)}, &{name})) return 1; }}"]


def kernel_error_check(closure: str) -> str:
    """The line reporting closure's err (a DISC_KERNEL_ERR_* code, runtime/host/disc_host.h)."""
    return f"    if ({closure}.err && disc_kernel_error(rt, {closure}.err)) return 1;"
