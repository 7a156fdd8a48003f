"""GEMM epilogues: the loop kernel that applies bias, activation and residual
to a dot's result runs inside the GEMM (DiscGemmArgs::epilogue), on each tile of
C right after the tile is computed and still in cache, instead of as a
second pass over C with its own thread-pool hop.

Runs after fusion: a dot takes as epilogue the first `fusion` after it that
reads its result (or a reshape view of it) only elementwise at the kernel's
own positions (no broadcast or index op reads it shifted) and whose other
operands all exist before the dot.  That kernel moves right after the dot
(with the views it reads) and the pair is marked: dot attr "epilogue" = the
kernel id, fusion attr "epilogue_of" = the dot result's name
(codegen/gemm.py emits them as one call)."""
from __future__ import annotations

import dataclasses

from ..ir.core import Func, Op, Value
from ..ir.opset import spec


def _views(func: Func, v: Value) -> dict[Value, Op]:
    """Top-level reshapes (buffer aliases, passes/fusion.py) of v, transitively."""
    out: dict[Value, Op] = {}
    for op in func.ops:
        if op.name == "reshape" and (op.operands[0] is v or op.operands[0] in out):
            out[op.result] = op
    return out


def _reads_only_elementwise(fusion: Op, xs: set[Value]) -> bool:
    """Every region op reading one of xs is elementwise (reads position i)."""
    return all(spec(o.name).kind == "elementwise"
               for o in fusion.region.ops if any(x in xs for x in o.operands))


def _epilogue_for(func: Func, dot: Op, pos: dict[Op, int],
                  producer: dict[Value, Op]) -> tuple[Op, list[Op]] | None:
    """(fusion, the views it reads) that can run as dot's epilogue, or None."""
    v = dot.result
    views = _views(func, v)
    mine = {v, *views}
    for op in func.ops[pos[dot] + 1:]:
        if op.name != "fusion" or "epilogue_of" in op.attrs:
            continue
        read = {x for x in op.operands if x in mine}
        if not read:
            continue
        shape = op.results[0].shape
        others_ready = all(x in mine or x not in producer or pos[producer[x]] < pos[dot]
                           for x in op.operands)
        if (all(x.shape == shape for x in read) and others_ready
                and _reads_only_elementwise(op, read)):
            need: list[Op] = []
            for x in read:
                while x in views:
                    need.append(views[x])
                    x = views[x].operands[0]
            return op, sorted(set(need), key=pos.get)
    return None


def fuse_gemm_epilogues(func: Func) -> Func:
    ops = list(func.ops)
    for dot in [op for op in func.ops if op.name == "dot"]:
        cur = dataclasses.replace(func, ops=ops)
        pos = {op: i for i, op in enumerate(ops)}
        producer = {r: op for op in ops for r in op.results}
        found = _epilogue_for(cur, dot, pos, producer)
        if found is None:
            continue
        fusion, views = found
        kernel = fusion.attrs["kernel"]
        new_dot = Op(dot.name, dot.operands, dot.results, dict(dot.attrs, epilogue=kernel),
                     dot.region)
        new_fusion = Op(fusion.name, fusion.operands, fusion.results,
                        dict(fusion.attrs, epilogue_of=dot.result.name), fusion.region)
        moved = {fusion, *views}
        rest = [op for op in ops if op not in moved]
        i = rest.index(dot)
        ops = rest[:i] + [new_dot, *views, new_fusion] + rest[i + 1:]
    return dataclasses.replace(func, ops=ops)
