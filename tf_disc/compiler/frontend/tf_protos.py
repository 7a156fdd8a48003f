"""The compiler's one contact with TensorFlow: its protobuf messages
(FunctionDef, OpDef) and the OpDefs of the ops a cluster uses.

In a TF process both come from TensorFlow.  The compile worker
(compiler/remote) runs without TensorFlow's runtime, which costs seconds and
hundreds of MB to import: its boot makes the `tensorflow` package a bare
one (its generated `tensorflow.core.framework.*_pb2` modules import alone,
with protobuf), calls `use_sent_op_defs_only`, and answers op_def from the
OpDefs the requesting process sent with each request (`op_defs_for` there,
`sent_op_defs` here)."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

# Set in the compile worker: OpDefs come only from the request.
_sent_only = False
# The request's OpDefs by op name, while the worker compiles it.
_sent: dict[str, Any] = {}


def function_def(data: bytes) -> Any:
    """Serialized FunctionDef bytes -> a FunctionDef message."""
    from tensorflow.core.framework import function_pb2

    fdef = function_pb2.FunctionDef()
    fdef.ParseFromString(data)
    return fdef


def op_def(op: str) -> Any:
    """The OpDef of op type `op`; None for an op not registered (in the
    worker: not sent, i.e. not registered in the requesting process)."""
    if _sent_only:
        return _sent.get(op)
    from tensorflow.python.framework import op_def_registry

    return op_def_registry.get(op)


def op_defs_for(data: bytes) -> list[bytes]:
    """The serialized OpDefs of every op of the cluster `data` (FunctionDef
    bytes) and of the functions it carries for its control flow: all that
    op_def is asked while compiling it.  Runs where TensorFlow is."""
    from .functions import NESTED_FUNCTIONS_ATTR

    ops: set[str] = set()
    todo = [data]
    while todo:
        fdef = function_def(todo.pop())
        ops.update(nd.op for nd in fdef.node_def)
        if NESTED_FUNCTIONS_ATTR in fdef.attr:
            todo.extend(fdef.attr[NESTED_FUNCTIONS_ATTR].list.s)
    defs = (op_def(name) for name in sorted(ops))
    return [d.SerializeToString(deterministic=True) for d in defs if d is not None]


def use_sent_op_defs_only() -> None:
    """From now on op_def answers from sent_op_defs only (the worker's boot)."""
    global _sent_only
    _sent_only = True


@contextlib.contextmanager
def sent_op_defs(blobs: list[bytes]) -> Iterator[None]:
    """op_def answers from these serialized OpDefs (op_defs_for's) inside
    the block: the compile worker serves one request at a time."""
    from tensorflow.core.framework import op_def_pb2

    global _sent
    table = {}
    for blob in blobs:
        d = op_def_pb2.OpDef.FromString(blob)
        table[d.name] = d
    _sent = table
    try:
        yield
    finally:
        _sent = {}
