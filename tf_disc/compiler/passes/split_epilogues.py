"""Split a loop kernel into independent parts that each finish a different
GEMM, so that each part can become its own dot's epilogue (gemm_epilogue.py).

Loop fusion (fusion.py) puts every value of one shape and level into one
kernel: BERT's Q, K and V bias adds become one kernel of three outputs.  It
reads all three products, so only the last dot can take it as epilogue, and
it then re-reads the first two products from memory after the third GEMM
(workload B: 0.6% of the time in that kernel).  Split, each bias add runs on
its own product's tiles while they are in cache, and the three dots can
still merge (merge_gemm.py).

A kernel is split along its connected parts (region ops linked through the
values they define; shared outer operands do not link them) only when at
least two parts read dot results, each a different set of dots.  Parts that
read no dot stay together in one kernel.  The first part keeps the kernel
id; the others get new ones."""
from __future__ import annotations

import dataclasses

from ..ir.core import Func, Op, Region, Value, outer_operands


def _dot_sources(func: Func) -> dict[Value, Op]:
    """Dot results and their (transitive) reshape views -> the dot."""
    out: dict[Value, Op] = {}
    for op in func.ops:
        if op.name == "dot":
            out[op.result] = op
        elif op.name == "reshape" and op.operands[0] in out:
            out[op.result] = out[op.operands[0]]
    return out


def _parts(region: Region) -> list[list[int]] | None:
    """Region op indices grouped by connected part, in first-op order, or
    None when an output is not computed in the region."""
    parent = list(range(len(region.ops)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    defined_by = {r: i for i, o in enumerate(region.ops) for r in o.results}
    for i, o in enumerate(region.ops):
        for v in o.operands:
            if v in defined_by:
                parent[find(i)] = find(defined_by[v])
    if any(v not in defined_by for v in region.outputs):
        return None
    groups: dict[int, list[int]] = {}
    for i in range(len(region.ops)):
        groups.setdefault(find(i), []).append(i)
    return list(groups.values())


def _split(op: Op, dots: dict[Value, Op], next_kernel: int) -> list[Op]:
    """op as one kernel per dot-reading part (op itself when nothing splits)."""
    parts = _parts(op.region)
    if parts is None or len(parts) < 2:
        return [op]
    reads = [frozenset(dots[v] for i in p for v in op.region.ops[i].operands if v in dots)
             for p in parts]
    by_dots: dict[frozenset, list[int]] = {}
    for p, r in zip(parts, reads):
        by_dots.setdefault(r, []).extend(p)
    if sum(1 for r in by_dots if r) < 2:
        return [op]
    defined_by = {r: i for i, o in enumerate(op.region.ops) for r in o.results}
    out: list[Op] = []
    for key in sorted(by_dots, key=lambda r: min(by_dots[r])):
        idx = sorted(by_dots[key])
        ops = [op.region.ops[i] for i in idx]
        mine = set(idx)
        outs = [j for j, v in enumerate(op.region.outputs) if defined_by[v] in mine]
        kernel = op.attrs["kernel"] if not out else next_kernel + len(out) - 1
        out.append(Op("fusion", outer_operands(ops), [op.results[j] for j in outs],
                      dict(op.attrs, kernel=kernel),
                      Region(ops, [op.region.outputs[j] for j in outs])))
    return out


def split_epilogues(func: Func) -> Func:
    dots = _dot_sources(func)
    if not dots:
        return func
    next_kernel = 1 + max((op.attrs["kernel"] for op in func.ops if op.name == "fusion"),
                          default=-1)
    ops: list[Op] = []
    for op in func.ops:
        if op.name != "fusion" or "epilogue_of" in op.attrs:
            ops.append(op)
            continue
        parts = _split(op, dots, next_kernel)
        next_kernel += len(parts) - 1
        ops.extend(parts)
    return dataclasses.replace(func, ops=ops)
