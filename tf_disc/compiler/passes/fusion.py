"""Loop fusion: elementwise and broadcast ops -> `fusion` ops, one loop
kernel per group of values with the same symbolic shape.

Values that must live in memory ("materialized"): returned values, and
computed operands of broadcast_in_dim (a broadcast of a buffer is a strided
load; of a computed value it would recompute per output element).  Each
materialized value gets a level = longest chain of shape changes before it;
a kernel is one (shape, level) group, and its region is the backward slice
of its roots, stopping at arguments, constants and other kernels' outputs.
"""
from __future__ import annotations

import dataclasses
import logging

from ..ir.core import Func, Namer, Op, Region, Value, outer_operands
from ..ir.opset import spec

log = logging.getLogger("blade_disc_tf.compiler")


def _is_computed(op: Op) -> bool:
    return spec(op.name).kind in ("elementwise", "broadcast", "index")


def _is_library(op: Op) -> bool:
    """Ops with their own top-level call (dot, reduce, stitch kernels): not
    fused; their computed operands are materialized."""
    return spec(op.name).kind == "library" or op.name == "stitch"


def _reads_shifted(op: Op) -> bool:
    """Ops that read their operands at other positions than their own."""
    return spec(op.name).kind in ("broadcast", "index") or _is_library(op)


def _unread_failing(func: Func) -> list[Value]:
    """Results of ops that can fail but feed no returned value: they are
    kernel roots of their own so that their errors are still raised."""
    producer = {r: op for op in func.ops for r in op.results}
    reached: set[Op] = set()
    stack = list(func.rets)
    while stack:
        op = producer.get(stack.pop())
        if op is not None and op not in reached:
            reached.add(op)
            stack.extend(op.operands)
    return [op.results[0] for op in func.ops
            if spec(op.name).may_fail and op not in reached]


def fuse(func: Func) -> Func:
    producer = {r: op for op in func.ops for r in op.results}
    computed = {r for op in func.ops if _is_computed(op) for r in op.results}
    barriers = [op for op in func.ops if _is_library(op)]
    barrier_vals = {r for op in barriers for r in op.results}
    materialized: list[Value] = []
    mat_set: set[Value] = set()

    def mark(v: Value) -> None:
        if v in computed and v not in mat_set:
            mat_set.add(v)
            materialized.append(v)

    for v in func.rets:
        mark(v)
    for v in _unread_failing(func):  # computed for their errors only (dce.py)
        mark(v)
    for op in func.ops:
        if _reads_shifted(op):
            for x in op.operands:
                if x in computed and x not in mat_set:
                    log.debug("fusion: %%%s is materialized (read by %s)", x.name, op.name)
                mark(x)

    # Backward slices and levels, in program order.
    order = {op_: i for i, op_ in enumerate(func.ops)}
    slices: dict[Value, set[Op]] = {}
    deps: dict[Value, dict[Value, bool]] = {}   # materialized dep -> read shifted?
    bdeps: dict[Value, set[Value]] = {}          # library results read
    for m in sorted(materialized, key=lambda v: order[producer[v]]):
        seen_ops: set[Op] = set()
        ext: dict[Value, bool] = {}
        bext: set[Value] = set()
        stack = [(m, False)]
        while stack:
            v, shifted = stack.pop()
            op = producer.get(v)
            if op is None or not _is_computed(op) or (v in mat_set and v is not m):
                if v in mat_set:
                    ext[v] = ext.get(v, False) or shifted
                if v in barrier_vals:  # library results
                    bext.add(v)
                continue
            if op in seen_ops:
                continue
            seen_ops.add(op)
            stack.extend((x, _reads_shifted(op)) for x in op.operands)
        slices[m], deps[m], bdeps[m] = seen_ops, ext, bext
    level: dict[Value, int] = {}
    blevel: dict[Value, int] = {}
    for op in func.ops:
        if op in barriers:
            # runs after the kernels of its level; its readers one level later
            lv = max([level.get(u, 0) for u in op.operands], default=0)
            for r in op.results:
                blevel[r] = level[r] = lv
        for m in op.results:
            if m in mat_set:
                level[m] = max([level[u] + (sh or u.shape != m.shape)
                                for u, sh in deps[m].items()]
                               + [blevel[b] + 1 for b in bdeps[m]], default=0)

    # A materialized reshape of a buffer is that buffer (row-major order is
    # kept): no copy kernel, unless it is an output (written by a kernel).
    returned = set(func.rets)
    aliases = [m for m in materialized if producer[m].name == "reshape" and m not in returned]
    groups: dict[tuple, list[Value]] = {}
    for m in sorted(materialized, key=lambda v: order[producer[v]]):
        if m not in aliases:
            groups.setdefault((level[m], m.shape), []).append(m)

    namer = Namer.for_func(func)
    outer: dict[Value, Value] = {}   # inner materialized value -> fusion result
    emitted: set[Value] = set()
    kernels: list[tuple[int, int, Op]] = []
    for k, ((lvl, _shape), roots) in enumerate(sorted(groups.items(), key=lambda kv: (
            kv[0][0], min(order[producer[v]] for v in kv[1])))):
        body_ops = sorted(set().union(*(slices[r] for r in roots)), key=order.get)
        defined = {r for o in body_ops for r in o.results}
        # Reads of other kernels' outputs go through their fusion results.
        inner_ops = []
        # A value recomputed in a second kernel gets a fresh name there (SSA).
        rename: dict[Value, Value] = {}
        for o in body_ops:
            ops_in = [outer.get(v, v) if v not in defined or v in outer else
                      rename.get(v, v) for v in o.operands]
            res = []
            for r in o.results:
                if r in emitted:
                    rename[r] = Value(namer(), r.type)
                    r = rename[r]
                emitted.add(r)
                res.append(r)
            inner_ops.append(Op(o.name, ops_in, res, dict(o.attrs)))
        results = [Value(namer(), r.type) for r in roots]
        for r, res in zip(roots, results):
            outer[r] = res
        fusion = Op("fusion", outer_operands(inner_ops), results, {"kernel": k},
                    Region(inner_ops, [rename.get(r, r) for r in roots]))
        kernels.append((lvl, k, fusion))
        log.debug("fusion: kernel %d (level %d) computes %s from %d ops", k, lvl,
                  [r.name for r in roots], len(inner_ops))

    rest = [op for op in func.ops if not _is_computed(op) and not _is_library(op)]
    asserts = [op for op in rest if spec(op.name).kind == "assert"]
    consts = [op for op in rest if op not in asserts]
    # Library ops run after the kernels of their level, in program order.
    libs = [(level[op.results[0]], len(kernels) + i,
             Op(op.name, [outer.get(v, v) for v in op.operands], list(op.results),
                dict(op.attrs), _reroute_region(op.region, outer)))
            for i, op in enumerate(o for o in func.ops if _is_library(o))]
    # aliases: after their source (a lower level), before their readers
    views = [(level[m], -1, Op("reshape", [outer.get(producer[m].operands[0],
                                                     producer[m].operands[0])], [m],
                               dict(producer[m].attrs))) for m in aliases]
    steps = sorted(kernels + libs + views, key=lambda t: (t[0], t[1]))
    ops = consts + asserts + [f for _, _, f in steps]
    rets = [outer[v] if v in outer else v for v in func.rets]
    return dataclasses.replace(func, ops=ops, rets=rets, attrs=dict(func.attrs))


def _reroute_region(region: Region | None, outer: dict[Value, Value]) -> Region | None:
    """A stitch region reading kernel outputs through their fusion results."""
    if region is None:
        return None
    inner = {r for o in region.ops for r in o.results}
    return Region([Op(o.name, [v if v in inner else outer.get(v, v) for v in o.operands],
                      o.results, dict(o.attrs)) for o in region.ops], region.outputs)
