"""Stitch fusion: row reductions with their elementwise producers and
consumers -> one `stitch` op (one kernel, codegen/cpu/stitch.py).

Softmax, LayerNorm and mean/variance + normalize reduce over the last dim
and broadcast the per-row result back over the row.  Loop fusion alone
(fusion.py) runs each reduction as its own pass over memory and materializes
every value between them; a stitch kernel walks one row at a time and keeps
it in cache for all of its reductions and elementwise work.

For a row shape S = outer + [R], the values in a stitch region are of three
classes: row values (shape S), per-row values (shape outer or outer + [1])
and scalars (rank 0).  Members: reduce over dim rank-1 of an S value,
elementwise ops producing one of the classes, and broadcasts into row or
per-row shapes (of external values, or of in-region per-row/scalar values
mapped identically onto the outer dims).
"""
from __future__ import annotations

import dataclasses
import logging

from ..ir.core import Func, Namer, Op, Region, Value
from ..ir.opset import spec

log = logging.getLogger("blade_disc_tf.compiler")


@dataclasses.dataclass(frozen=True)
class RowShape:
    """The row shape of one stitch group: classifies values."""
    dims: tuple[str, ...]

    @property
    def outer(self) -> tuple[str, ...]:
        return self.dims[:-1]

    def klass(self, v: Value) -> str | None:
        """'row', 'per_row', 'scalar' or None (not part of this row space)."""
        if v.shape == self.dims:
            return "row"
        if v.shape in (self.outer, self.outer + ("1",)):
            return "per_row"
        if v.type.rank == 0:
            return "scalar"
        return None


def is_row_reduce(op: Op) -> bool:
    """A reduce over the last dim only (the pattern stitch kernels handle)."""
    if op.name != "reduce" or op.operands[0].type.rank < 1:
        return False
    return list(op.attrs["dimensions"]) == [op.operands[0].type.rank - 1]


def _outer_identity(x: Value, op: Op, rs: RowShape) -> bool:
    """broadcast_in_dim of an in-region per-row or scalar value whose dims
    map one to one onto the outer dims (a per-row read)."""
    k = rs.klass(x)
    if k == "scalar":
        return True
    return k == "per_row" and list(op.attrs["broadcast_dimensions"]) == list(range(x.type.rank))


def _member(op: Op, rs: RowShape) -> bool:
    """Whether op can be computed inside a stitch kernel of row shape rs."""
    if op.name == "reduce":
        return is_row_reduce(op) and op.operands[0].shape == rs.dims \
            and rs.klass(op.result) == "per_row"
    kind = spec(op.name).kind
    if kind not in ("elementwise", "broadcast") or len(op.results) != 1:
        return False
    k = rs.klass(op.result)
    if kind == "broadcast":
        return k in ("row", "per_row")
    return k is not None


def _inner_link(op: Op, x: Value, rs: RowShape) -> bool:
    """Whether operand x of member op may be computed in the same region."""
    if op.name == "broadcast_in_dim":
        return _outer_identity(x, op, rs)
    return True


def _grow(seed: Op, rs: RowShape, producer: dict, users: dict, taken: set) -> set[Op]:
    group = {seed}
    stack = [seed]
    while stack:
        op = stack.pop()
        for x in op.operands:
            p = producer.get(x)
            if p is not None and p not in group and p not in taken and _member(p, rs) \
                    and _inner_link(op, x, rs):
                group.add(p)
                stack.append(p)
        for r in op.results:
            for u in users.get(r, []):
                if u not in group and u not in taken and _member(u, rs) \
                        and _inner_link(u, r, rs):
                    group.add(u)
                    stack.append(u)
    return group


def _drop_reread_inputs(group: set[Op], ops: list[Op], producer: dict) -> set[Op]:
    """Drops members upstream of every reduction of the group that a
    non-member reads on a path back into the group (a half LayerNorm's
    input rounded to half, which the next GEMM also reads): they run before
    that non-member as loop kernels, and the kernel after it, instead of
    _make_convex dropping all of the group behind the non-member."""
    while True:
        late: set[Op] = set()           # members downstream of a reduction
        origins: dict[Value, set[Op]] = {}   # early members reaching a value via outsiders
        culprits: set[Op] = set()
        for op in ops:
            reached = set().union(*(origins.get(x, set()) for x in op.operands))
            if op in group:
                if op.name == "reduce" or any(producer.get(x) in late for x in op.operands):
                    late.add(op)
                culprits |= reached
            else:
                reached |= {producer[x] for x in op.operands
                            if producer.get(x) in group and producer[x] not in late}
            if reached:
                origins.update(dict.fromkeys(op.results, reached))
        if not culprits:
            return group
        group = group - culprits


def _make_convex(group: set[Op], ops: list[Op], producer: dict) -> set[Op]:
    """Drops members downstream of a non-member that reads the group (the
    kernel would have to run both before and after that op)."""
    group = _drop_reread_inputs(group, ops, producer)
    while True:
        tainted: set[Value] = set()     # values depending on the group through an outsider
        bad: set[Op] = set()
        for op in ops:
            from_group = any(producer.get(x) in group for x in op.operands)
            via_out = any(x in tainted for x in op.operands)
            if op in group:
                if via_out:
                    bad.add(op)
            elif from_group or via_out:
                tainted.update(op.results)
            if op in bad:
                tainted.update(op.results)
        if not bad:
            return group
        group = group - bad


def _drop_shifted_reads(group: set[Op], ops: list[Op], producer: dict,
                        rs: RowShape) -> set[Op]:
    """Drops broadcasts that read an in-group value other than per row
    (e.g. a [B,H,S] value along the rows of [B,H,S,S]: it joined the group
    through another user) and everything after them in the group."""
    out: set[Op] = set()
    for op in ops:
        if op not in group:
            continue
        ins = [x for x in op.operands if producer.get(x) in group]
        if any(producer[x] not in out for x in ins):
            continue
        if op.name == "broadcast_in_dim" and ins and not _outer_identity(ins[0], op, rs):
            continue
        out.add(op)
    return out


def _drop_escaping_scalars(group: set[Op], rs: RowShape, users: dict,
                           rets: set[Value]) -> set[Op]:
    """Rank-0 values read outside the kernel stay outside: the kernel
    computes them per row (no row when the outer dims are empty)."""
    while True:
        bad = {o for o in group if rs.klass(o.results[0]) == "scalar" and (
            o.results[0] in rets or any(u not in group for u in users.get(o.results[0], [])))}
        if not bad:
            return group
        group = group - bad


def _drop_export_only(group: set[Op], producer: dict, users: dict) -> set[Op]:
    """Drops members that read no member and that no member reads (e.g. a
    broadcast of the next layer's LayerNorm gamma that joined through an op
    _make_convex dropped): the kernel would only write them out, at the
    row shape, for the ops outside that read them (decode_loop.py's cluster:
    18 of one kernel's 20 outputs).  Reductions stay."""
    return {o for o in group if o.name == "reduce"
            or any(producer.get(x) in group for x in o.operands)
            or any(u in group for r in o.results for u in users.get(r, []))}


def _toposort(ops: list[Op]) -> list[Op]:
    """Stable topological order (program order where dependencies allow)."""
    producer = {r: op for op in ops for r in op.results}
    placed: set[Op] = set()
    out: list[Op] = []

    def place(op: Op) -> None:
        stack = [(op, False)]
        while stack:
            o, ready = stack.pop()
            if o in placed:
                continue
            if ready:
                placed.add(o)
                out.append(o)
                continue
            stack.append((o, True))
            for x in reversed(o.operands):
                p = producer.get(x)
                if p is not None and p not in placed:
                    stack.append((p, False))
    for op in ops:
        place(op)
    return out


def stitch(func: Func) -> Func:
    """Replace each row-reduction group by one `stitch` op."""
    ops = list(func.ops)
    taken: set[Op] = set()
    groups: list[tuple[set[Op], RowShape]] = []
    for op in ops:
        if op in taken or not is_row_reduce(op):
            continue
        producer = {r: o for o in ops for r in o.results}
        users: dict[Value, list[Op]] = {}
        for o in ops:
            for x in o.operands:
                users.setdefault(x, []).append(o)
        rs = RowShape(op.operands[0].shape)
        group = _make_convex(_grow(op, rs, producer, users, taken), ops, producer)
        group = _drop_escaping_scalars(_drop_shifted_reads(group, ops, producer, rs), rs,
                                       users, set(func.rets))
        group = _drop_export_only(group, producer, users)
        if not any(o.name == "reduce" for o in group):
            continue
        taken |= group
        groups.append((group, rs))
    if not groups:
        return func
    namer = Namer.for_func(func)
    rets = set(func.rets)
    sub: dict[Value, Value] = {}     # region value -> stitch result
    new_ops = list(ops)
    for group, rs in groups:
        members = [o for o in new_ops if o in group]
        inside = {r for o in members for r in o.results}
        outside_users = {x for o in new_ops if o not in group for x in o.operands}
        outs = [r for o in members for r in o.results if r in outside_users or r in rets]
        if not outs:
            continue
        externals: list[Value] = []
        for o in members:
            for x in o.operands:
                if x not in inside and x not in externals:
                    externals.append(x)
        results = [Value(namer(), r.type) for r in outs]
        sub.update(zip(outs, results))
        st = Op("stitch", externals, results, {"row_shape": list(rs.dims)},
                Region(members, list(outs)))
        new_ops[max(new_ops.index(o) for o in members)] = st
        new_ops = [o for o in new_ops if o not in group]
        log.debug("stitch: %d ops over rows of %s -> %s", len(members), rs.dims,
                  [r.name for r in outs])
    new_ops = [_substitute(o, sub) for o in new_ops]
    return dataclasses.replace(func, ops=_toposort(new_ops),
                               rets=[sub.get(v, v) for v in func.rets])


def _substitute(op: Op, sub: dict[Value, Value]) -> Op:
    """op reading stitch results instead of the region values they yield."""
    if op.name == "stitch":
        inner = {r for o in op.region.ops for r in o.results}
        return Op(op.name, [sub.get(x, x) for x in op.operands], op.results, op.attrs,
                  Region([Op(o.name, [x if x in inner else sub.get(x, x) for x in o.operands],
                             o.results, o.attrs) for o in op.region.ops], op.region.outputs))
    return Op(op.name, [sub.get(x, x) for x in op.operands], op.results, op.attrs, op.region)
