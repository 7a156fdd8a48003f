"""Convolution epilogues from elementwise ops: a `window` convolution whose
only reader is multiply by a per-channel vector (batch norm's scale), then
adds of one (its shift, or a bias) and, for an ungrouped Conv2D, of a
tensor of its own shape (a residual connection), then relu or relu6 (each
step optional, at least one) takes them as its epilogue attrs scale /
shift / residual / activation (codegen/conv.py; the runtime applies them
on the kernel's registers before the store, in the order scale, shift,
residual: a residual added before the shift in the IR is reassociated, as
Keras computes it: (conv * s + t) + shortcut).  Without this, a graph whose batch norm is plain arithmetic
(Keras 3's BatchNormalization, an unfused Conv2D + BiasAdd) runs the chain
as a loop kernel: a second pass over the convolution's output, with its own
thread-pool hop.  Grappler's _FusedConv2D gets the same epilogue at lowering
(ops/nn_conv.py).

Per-channel vector: a broadcast_in_dim of a [C] value (C the convolution's
output channels) along dim 3.  The chain's intermediate results must have
no other reader (nor be returned); the rewritten window takes the place of
the chain's last op and defines its result value, so readers are unchanged.
Only float convolutions (f32, f64) without an epilogue, as at lowering."""
from __future__ import annotations

import dataclasses

from ..dtypes import F32, F64
from ..ir.core import Func, Op, Value

_KINDS = ("conv", "depthwise")
_ACTIVATIONS = ("relu", "relu6")


def _channel_vector(op: Op | None, y: Value) -> Value | None:
    """The [C] value op broadcasts along y's channel dim, or None."""
    if op is None or op.name != "broadcast_in_dim" or op.result.shape != y.shape:
        return None
    v = op.operands[0]
    if list(op.attrs.get("broadcast_dimensions", [])) != [3] or v.shape != (y.shape[3],):
        return None
    return v if v.dtype == y.dtype else None


def _other(op: Op, y: Value) -> Value | None:
    """op's operand beside y (binary op reading y once), else None."""
    if len(op.operands) != 2 or op.operands.count(y) != 1:
        return None
    return op.operands[1] if op.operands[0] is y else op.operands[0]


def _residual(v: Value, y: Value, producer: dict[Value, Op]) -> bool:
    """Whether v can be the residual of y's window: y's type, and a buffer
    (not a broadcast, which later passes keep unmaterialized)."""
    op = producer.get(v)
    return v.type == y.type and (op is None or op.name != "broadcast_in_dim")


def _match(window: Op, users: dict[Value, list[Op]], producer: dict[Value, Op],
           returned: set[Value], claimed: set[Op]) -> tuple[list[Op], dict[str, Value], str] | None:
    """(chain ops, epilogue operands by attr name, activation) folding into
    window, or None; the chain stops before an op another window's chain
    took (claimed)."""
    y = cur = window.result
    chain: list[Op] = []
    found: dict[str, Value] = {}
    takes_residual = window.attrs.get("kind") == "conv" and not window.attrs.get("grouped")

    def sole_reader(v: Value) -> Op | None:
        readers = users.get(v, [])
        ok = len(readers) == 1 and v not in returned and readers[0] not in claimed
        return readers[0] if ok else None

    nxt = sole_reader(y)
    while nxt is not None and nxt.name in ("multiply", "add"):
        other = _other(nxt, cur)
        if other is None:
            break
        vec = _channel_vector(producer.get(other), y)
        if nxt.name == "multiply":
            role = "scale" if vec is not None and not found else None
        elif vec is not None:
            role = "shift"
        else:
            role = "residual" if takes_residual and _residual(other, y, producer) else None
        if role is None or role in found:
            break
        found[role] = vec if vec is not None else other
        chain.append(nxt)
        cur = nxt.result
        nxt = sole_reader(cur)
    activation = "none"
    if nxt is not None and nxt.name in _ACTIVATIONS and nxt.operands == [cur]:
        activation = nxt.name
        chain.append(nxt)
    return (chain, found, activation) if chain else None


def fuse_conv_epilogues(func: Func) -> Func:
    """Per-channel scale/shift and relu(6) after convolutions into their
    window ops (module docstring)."""
    users = func.users()
    producer = {r: op for op in func.ops for r in op.results}
    returned = set(func.rets)
    replace: dict[Op, Op] = {}   # the chain's last op -> the new window
    drop: set[Op] = set()
    # Ops in chains taken so far: two windows' chains can meet (a projection
    # block's add of two convolutions); the later one stops before the add,
    # its last value becoming the earlier one's residual.
    claimed: set[Op] = set()
    for op in func.ops:
        a = op.attrs
        if (op.name != "window" or a.get("kind") not in _KINDS or op.result.dtype not in (F32, F64)
                or a.get("scale") or a.get("shift") or a.get("residual")
                or a.get("activation", "none") != "none" or op.result.type.rank != 4):
            continue
        m = _match(op, users, producer, returned, claimed)
        if m is None:
            continue
        chain, found, activation = m
        claimed.update(chain)
        roles = ("scale", "shift", "residual")  # the operand order of codegen/conv.py
        replace[chain[-1]] = Op("window", op.operands + [found[r] for r in roles if r in found],
                                [chain[-1].result],
                                {**a, **{r: r in found for r in roles}, "activation": activation})
        drop.add(op)
        drop.update(chain[:-1])
    if not replace:
        return func
    ops = [replace.get(op, op) for op in func.ops if op not in drop]
    return dataclasses.replace(func, ops=ops)
