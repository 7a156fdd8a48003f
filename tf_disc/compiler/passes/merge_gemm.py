"""Merged GEMMs: unbatched dots that share their lhs (same value, same
layout: BERT's Q, K and V projections of one x) and do not depend on one
another run as one rt->gemm_multi call (codegen/gemm.py): one parallel
region over all their column tiles instead of one fork and join per
product, each product keeping its own B (a weight, never copied together),
C and epilogue kernel.

Runs after gemm_epilogue.py: a dot's bundle is the dot, the views its
epilogue reads and the epilogue kernel (contiguous there).  Members of a
group are gathered, in order, at the place of the last member's bundle;
that is valid when no op passed over reads a result of a moved bundle.
Each member dot gets attr "gemm_group" = [group, index, size]."""
from __future__ import annotations

import dataclasses

from ..ir.core import Func, Op, Value


def _reads(op: Op) -> set[Value]:
    """Values op reads, its region's included (regions may use outer values)."""
    out = set(op.operands)
    if op.region is not None:
        for o in op.region.ops:
            out.update(o.operands)
    return out


def _bundles(ops: list[Op]) -> dict[Op, list[Op]]:
    """Dot -> its ops (dot, views, epilogue kernel) for the dots that can join
    a group: no batch dims, lhs and rhs of the result's dtype."""
    pos = {op: i for i, op in enumerate(ops)}
    epilogue_at = {op.attrs["epilogue_of"]: op for op in ops if "epilogue_of" in op.attrs}
    out: dict[Op, list[Op]] = {}
    for op in ops:
        if op.name != "dot" or op.attrs["batch_lhs"] or "gemm_group" in op.attrs:
            continue
        if "epilogue" not in op.attrs:
            out[op] = [op]
            continue
        ep = epilogue_at.get(op.result.name)
        if ep is None:
            continue
        span = ops[pos[op]:pos[ep] + 1]
        if all(o.name == "reshape" for o in span[1:-1]):
            out[op] = span
    return out


def _key(dot: Op) -> tuple:
    """What members share: A and its layout, B's layout, the dtype."""
    lhs, rhs = dot.operands
    a = dot.attrs
    return (lhs, tuple(a["lhs_free"]), tuple(a["lhs_contract"]),
            (rhs.type.rank - 1) in a["rhs_contract"], dot.result.dtype,
            a.get("precision"))


def _can_join(ops: list[Op], pos: dict[Op, int], group: list[list[Op]],
              bundle: list[Op]) -> bool:
    """Whether group's bundles can move down to just before bundle: no op
    from the group's start to bundle's end, other than theirs, reads them."""
    moved = {o for b in group for o in b}
    made = {r for o in moved for r in o.results}
    return not any(_reads(o) & made
                   for o in ops[pos[group[0][0]]:pos[bundle[-1]] + 1] if o not in moved)


def _groups(ops: list[Op]) -> list[list[list[Op]]]:
    """Groups of 2+ bundles, greedily in program order."""
    pos = {op: i for i, op in enumerate(ops)}
    open_: dict[tuple, list[list[Op]]] = {}
    done: list[list[list[Op]]] = []
    for dot, bundle in _bundles(ops).items():
        key = _key(dot)
        group = open_.get(key)
        if group is not None and _can_join(ops, pos, group, bundle):
            group.append(bundle)
            continue
        if group is not None and len(group) > 1:
            done.append(group)
        open_[key] = [bundle]
    done += [g for g in open_.values() if len(g) > 1]
    return done


def merge_gemms(func: Func) -> Func:
    ops = list(func.ops)
    groups = _groups(ops)
    if not groups:
        return func
    first_id = 1 + max((op.attrs["gemm_group"][0] for op in ops if "gemm_group" in op.attrs),
                       default=-1)
    for gid, group in enumerate(groups, start=first_id):
        marked = []
        for i, bundle in enumerate(group):
            dot = bundle[0]
            tag = dict(dot.attrs, gemm_group=[gid, i, len(group)])
            marked += [Op(dot.name, dot.operands, dot.results, tag, dot.region), *bundle[1:]]
        moved = {o for b in group for o in b}
        last = group[-1][-1]
        out: list[Op] = []
        for op in ops:
            if op is last:
                out += marked
            elif op not in moved:
                out.append(op)
        ops = out
    return dataclasses.replace(func, ops=ops)
