"""FunctionDef -> GraphModel: nodes with decoded attrs in topological order,
data inputs resolved to (producer, output index), control inputs dropped
(a cluster is pure; ordering is by data only), and the arg/ret mapping.

FunctionDef input syntax: "arg_name" (a function argument),
"node:out_arg:index" (output list out_arg of node), "^node" (control).
"""
from __future__ import annotations

import dataclasses

from ..errors import CompileError, Unsupported
from .tensors import decode_attr
from .tf_protos import function_def, op_def

ARG = "<arg>"  # producer name used for function arguments


@dataclasses.dataclass
class Node:
    name: str
    op: str
    inputs: list[tuple[str, int]]   # (producer node or ARG:<k>, output index)
    attrs: dict
    control: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class GraphModel:
    name: str
    arg_names: list[str]
    nodes: list[Node]               # topological order
    rets: list[tuple[str, int]]     # per output arg: (producer, index)
    ret_names: list[str]
    # per arg: dims Grappler proved (-1 unknown), None when none recorded
    static_dims: list[list[int] | None] = dataclasses.field(default_factory=list)


STATIC_DIMS_ATTR = "_disc_static_dims"  # grappler/static_facts.h kStaticDimsAttr


def _static_dims(fdef, n_args: int) -> list[list[int] | None]:
    """The optimizer's proven input dims, from each arg's attrs."""
    out: list[list[int] | None] = []
    for i in range(n_args):
        attrs = fdef.arg_attr[i].attr if i in fdef.arg_attr else {}
        a = attrs.get(STATIC_DIMS_ATTR) if STATIC_DIMS_ATTR in attrs else None
        out.append([int(d) for d in a.list.i] if a is not None else None)
    return out


def _flat_index(producer, out_arg: str, idx: int) -> int:
    """Flat output index of element idx of output list out_arg of producer
    (a NodeDef; ops such as FusedBatchNormV3 have several output args)."""
    definition = op_def(producer.op) if producer is not None else None
    if definition is None or len(definition.output_arg) <= 1:
        return idx
    flat = 0
    for a in definition.output_arg:
        if a.name == out_arg:
            return flat + idx
        if a.number_attr:
            flat += producer.attr[a.number_attr].i
        elif a.type_list_attr:
            flat += len(producer.attr[a.type_list_attr].list.type)
        else:
            flat += 1
    raise CompileError(f"node '{producer.name}' ({producer.op}) has no output {out_arg!r}")


def _resolve(ref: str, arg_index: dict[str, int], producers: dict | None = None
             ) -> tuple[str, int]:
    parts = ref.split(":")
    if len(parts) == 1:
        if ref in arg_index:
            return (f"{ARG}:{arg_index[ref]}", 0)
        return (ref, 0)
    if len(parts) == 3:
        node, out_arg, idx = parts
        return (node, _flat_index((producers or {}).get(node), out_arg, int(idx)))
    if len(parts) == 2:  # GraphDef style "node:idx" (tolerated)
        return (parts[0], int(parts[1]))
    raise CompileError(f"bad input reference {ref!r}")


def _toposort(nodes: dict[str, Node]) -> list[Node]:
    order, state = [], {}
    for root in nodes:
        stack = [(root, False)]
        while stack:
            name, done = stack.pop()
            if done:
                state[name] = 2
                order.append(nodes[name])
                continue
            if state.get(name):
                if state[name] == 1:
                    continue
                continue
            state[name] = 1
            stack.append((name, True))
            for src, _ in nodes[name].inputs:
                if not src.startswith(ARG) and not state.get(src):
                    stack.append((src, False))
    return order


def parse_function_def(data: bytes) -> GraphModel:
    """Parse serialized FunctionDef bytes into a GraphModel."""
    fdef = function_def(data)
    sig = fdef.signature
    arg_names = [a.name for a in sig.input_arg]
    arg_index = {n: i for i, n in enumerate(arg_names)}
    nodes: dict[str, Node] = {}
    producers = {nd.name: nd for nd in fdef.node_def}
    for nd in fdef.node_def:
        data_in, ctrl = [], []
        for ref in nd.input:
            if ref.startswith("^"):
                ctrl.append(ref[1:])
            else:
                data_in.append(_resolve(ref, arg_index, producers))
        attrs = {k: decode_attr(v) for k, v in nd.attr.items()}
        nodes[nd.name] = Node(nd.name, nd.op, data_in, attrs, ctrl)
    for node in nodes.values():
        for src, _ in node.inputs:
            if not src.startswith(ARG) and src not in nodes:
                raise CompileError(f"node '{node.name}' reads unknown node '{src}'")
    rets, ret_names = [], []
    for out in sig.output_arg:
        if out.name not in fdef.ret:
            raise CompileError(f"output {out.name} has no ret mapping")
        rets.append(_resolve(fdef.ret[out.name], arg_index, producers))
        ret_names.append(out.name)
    if any(a.number_attr or a.type_list_attr for a in sig.input_arg):
        raise Unsupported("list-typed function arguments")
    return GraphModel(sig.name, arg_names, _toposort(nodes), rets, ret_names,
                      _static_dims(fdef, len(arg_names)))


def to_pbtxt(data: bytes) -> str:
    """FunctionDef bytes as text proto (for dumps)."""
    from google.protobuf import text_format

    return text_format.MessageToString(function_def(data))
