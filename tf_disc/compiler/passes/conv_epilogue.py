"""Convolution epilogues from elementwise ops: a `window` convolution whose
only reader is multiply by a per-channel vector (batch norm's scale), then
add of one (its shift, or a bias), then relu or relu6 (each step optional,
at least one) takes them as its epilogue attrs scale / shift / activation
(codegen/conv.py; the runtime applies them on the kernel's registers before
the store).  Without this, a graph whose batch norm is plain arithmetic
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


def _match(window: Op, users: dict[Value, list[Op]], producer: dict[Value, Op],
           returned: set[Value]) -> tuple[list[Op], Value | None, Value | None, str] | None:
    """(chain ops, scale, shift, activation) folding into window, or None."""
    y = window.result
    chain: list[Op] = []
    scale = shift = None
    activation = "none"

    def sole_reader(v: Value) -> Op | None:
        readers = users.get(v, [])
        return readers[0] if len(readers) == 1 and v not in returned else None

    nxt = sole_reader(y)
    for name in ("multiply", "add"):
        if nxt is None or nxt.name != name:
            continue
        other = _other(nxt, y if not chain else chain[-1].result)
        vec = _channel_vector(producer.get(other), y) if other is not None else None
        if vec is None:
            break
        if name == "multiply":
            scale = vec
        else:
            shift = vec
        chain.append(nxt)
        nxt = sole_reader(nxt.result)
    if nxt is not None and nxt.name in _ACTIVATIONS and nxt.operands == [
            chain[-1].result if chain else y]:
        activation = nxt.name
        chain.append(nxt)
    return (chain, scale, shift, activation) if chain else None


def fuse_conv_epilogues(func: Func) -> Func:
    """Per-channel scale/shift and relu(6) after convolutions into their
    window ops (module docstring)."""
    users = func.users()
    producer = {r: op for op in func.ops for r in op.results}
    returned = set(func.rets)
    replace: dict[Op, Op] = {}   # the chain's last op -> the new window
    drop: set[Op] = set()
    for op in func.ops:
        a = op.attrs
        if (op.name != "window" or a.get("kind") not in _KINDS or op.result.dtype not in (F32, F64)
                or a.get("scale") or a.get("shift") or a.get("activation", "none") != "none"
                or op.result.type.rank != 4):
            continue
        m = _match(op, users, producer, returned)
        if m is None:
            continue
        chain, scale, shift, activation = m
        vectors = [v for v in (scale, shift) if v is not None]
        replace[chain[-1]] = Op("window", op.operands + vectors, [chain[-1].result],
                                {**a, "scale": scale is not None, "shift": shift is not None,
                                 "activation": activation})
        drop.add(op)
        drop.update(chain[:-1])
    if not replace:
        return func
    ops = [replace.get(op, op) for op in func.ops if op not in drop]
    return dataclasses.replace(func, ops=ops)
