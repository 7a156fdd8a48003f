"""Hostile node names: a cluster's FunctionDef with every node renamed to
text that breaks naive quoting or formatting (quotes, newlines, backslashes,
braces such as "{0}", printf and comment markers) must compile to the same
executable behaviour, and error messages must show the names verbatim."""
from __future__ import annotations

import random

from .generator import Program

HOSTILE_PARTS = ["{0}", "{1}", "{", "}", "{{0}}", "'", '"', "\\", "\\n", "\n", "\t", "%s",
                 "%n", "*/", "/*", "??=", "ü", "$x", "<arg>", " "]


def hostile_name(rng: random.Random, k: int) -> str:
    """A node name made of 1-3 hostile parts around plain text (unique by k)."""
    parts = [rng.choice(HOSTILE_PARTS) for _ in range(rng.randint(1, 3))]
    return f"n{k}" + "".join(p + rng.choice(["", "x", "_"]) for p in parts)


def rename_nodes(fdef_bytes: bytes, seed: int, fixed: dict | None = None) -> tuple[bytes, dict]:
    """FunctionDef bytes with every node renamed (`fixed` names some nodes
    itself); returns (bytes, old->new)."""
    from tensorflow.core.framework import function_pb2

    fdef = function_pb2.FunctionDef()
    fdef.ParseFromString(fdef_bytes)
    rng = random.Random(seed)
    names = {nd.name: hostile_name(rng, k) for k, nd in enumerate(fdef.node_def)}
    names.update(fixed or {})

    def ref(r: str) -> str:
        ctrl, body = ("^", r[1:]) if r.startswith("^") else ("", r)
        node, sep, rest = body.partition(":")
        return ctrl + names.get(node, node) + sep + rest

    for nd in fdef.node_def:
        nd.name = names[nd.name]
        inputs = [ref(r) for r in nd.input]
        del nd.input[:]
        nd.input.extend(inputs)
    for k in list(fdef.ret):
        fdef.ret[k] = ref(fdef.ret[k])
    return fdef.SerializeToString(), names


def renamed_message(message: str, names: dict) -> str:
    """An error message of the original function as the renamed one words it."""
    for old, new in sorted(names.items(), key=lambda kv: -len(kv[0])):
        message = message.replace(f"node '{old}'", f"node '{new}'")
        message = message.replace(f"operation {old} of type", f"operation {new} of type")
    return message


def mismatched_dims(program: Program, dims: dict, rng) -> dict | None:
    """Per-input dims with one input's dim changed (a shape error in most
    programs), or None when no input has a dim to change."""
    cands = [(i, j) for i, v in enumerate(program.inputs)
             for j, lab in enumerate(v.shape) if lab != "1"]
    if not cands:
        return None
    i, j = cands[int(rng.integers(len(cands)))]
    lab = program.inputs[i].shape[j]
    return {"input": i, "axis": j, "size": dims[lab] + 2}
