"""The functions a cluster's control flow calls (While cond and body, If
and Case branches).

The optimizer (grappler/loop_support.cc) copies them, as it saw them, into
the cluster's FunctionDef attr NESTED_FUNCTIONS_ATTR: a list of serialized
FunctionDefs, nested ones included.  Grappler later optimizes the graph's
own copies (it may cluster their ops into DiscLaunch nodes); the compiler
must see the ops the optimizer admitted."""
from __future__ import annotations

from .graph import GraphModel, parse_function_def
from .tf_protos import function_def

NESTED_FUNCTIONS_ATTR = "_disc_nested_functions"


def nested_functions(data: bytes) -> dict[str, GraphModel]:
    """name -> graph model of every function the cluster `data` (FunctionDef
    bytes) carries for its control flow; {} when none."""
    fdef = function_def(data)
    if NESTED_FUNCTIONS_ATTR not in fdef.attr:
        return {}
    out = {}
    for blob in fdef.attr[NESTED_FUNCTIONS_ATTR].list.s:
        g = parse_function_def(blob)
        out[g.name] = g
    return out


def with_nested_functions(fdef, library) -> bytes:
    """fdef (a FunctionDef) serialized with every function of `library` (a
    FunctionDefLibrary) it reaches through func attrs, as the optimizer
    sends a cluster: for tests and tools that compile a tf.function."""
    by_name = {f.signature.name: f for f in library.function}
    todo, seen = [fdef], set()
    while todo:
        for nd in todo.pop().node_def:
            for a in nd.attr.values():
                names = [a.func.name] if a.WhichOneof("value") == "func" else \
                    [f.name for f in a.list.func]  # a Case's branches
                for name in names:
                    if name in by_name and name not in seen:
                        seen.add(name)
                        todo.append(by_name[name])
    out = type(fdef)()
    out.CopyFrom(fdef)
    blobs = out.attr[NESTED_FUNCTIONS_ATTR].list.s
    for name in sorted(seen):
        blobs.append(by_name[name].SerializeToString(deterministic=True))
    return out.SerializeToString(deterministic=True)
