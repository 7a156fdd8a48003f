"""The `dot` IR op: a batched matrix product done by the runtime's GEMM
(rt->gemm), never by a loop kernel.

  %r = dot(%lhs, %rhs) {"batch_lhs": [..], "batch_rhs": [..],
                        "lhs_free": [..], "lhs_contract": [..],
                        "rhs_contract": [..], "rhs_free": [..]} : T[batch.., M.., N..]

Every operand dim is in exactly one group.  batch_lhs/batch_rhs list, per
result batch dim, the operand dim or -1 (absent: broadcast, as BatchMatMulV2
does for the lower-rank operand); operand batch dims of size 1 broadcast at
run time.  Free and contract groups are runs of consecutive operand dims (so
each collapses to one matrix dim with one stride) and the operand's last dim
is in one of them (so the GEMM reads unit-stride rows or columns: which one
decides the transpose flag).  lhs_contract and rhs_contract pair up in order;
their sizes are checked by the lowering (runtime asserts).
Result: batch dims (broadcast), then lhs_free dims, then rhs_free dims:
the logical order.  With attr "result_perm" (a transpose folded into the
output, passes/fold_transpose.py) the result is stored permuted: its dim d
is logical dim result_perm[d]; one lhs_free and one rhs_free dim, the latter
stored last (unit stride for the GEMM's rows).
"""
from __future__ import annotations

from .core import Op

ATTRS = ("batch_lhs", "batch_rhs", "lhs_free", "lhs_contract", "rhs_contract", "rhs_free")


def _consecutive(dims: list[int]) -> bool:
    return bool(dims) and dims == list(range(dims[0], dims[0] + len(dims)))


def logical_shape(op: Op) -> list[str]:
    """The result dims in logical order (batch, lhs free, rhs free)."""
    shape = list(op.result.shape)
    perm = op.attrs.get("result_perm")
    return shape if perm is None else [shape[perm.index(i)] for i in range(len(shape))]


def _verify_result_perm(op: Op) -> str | None:
    perm, rank = op.attrs["result_perm"], op.result.type.rank
    if sorted(perm) != list(range(rank)):
        return f"result_perm {perm} is not a permutation of rank {rank}"
    if len(op.attrs["lhs_free"]) != 1 or len(op.attrs["rhs_free"]) != 1 or perm[-1] != rank - 1:
        return "result_perm needs one lhs and one rhs free dim, the rhs one stored last"
    return None


def verify_dot(op: Op) -> str | None:
    """Structural problems of a dot op, or None."""
    a = op.attrs
    if any(k not in a for k in ATTRS):
        return f"dot needs attrs {ATTRS}"
    lhs, rhs = op.operands
    res = op.result
    if len(a["batch_lhs"]) != len(a["batch_rhs"]):
        return "batch_lhs and batch_rhs differ in length"
    if len(a["lhs_contract"]) != len(a["rhs_contract"]):
        return "lhs_contract and rhs_contract differ in length"
    for side, x, batch, free, contract in (
            ("lhs", lhs, a["batch_lhs"], a["lhs_free"], a["lhs_contract"]),
            ("rhs", rhs, a["batch_rhs"], a["rhs_free"], a["rhs_contract"])):
        used = [d for d in batch if d != -1] + free + contract
        if sorted(used) != list(range(x.type.rank)):
            return f"{side} dims {used} do not cover rank {x.type.rank} exactly once"
        if not _consecutive(free) or not _consecutive(contract):
            return f"{side} free/contract groups must be runs of consecutive dims"
        if x.type.rank - 1 not in free + contract:
            return f"{side} last dim must be a free or contract dim"
        if x.dtype != res.dtype:
            return "operand dtypes must equal the result dtype"
    if not res.dtype.is_float:
        return "dot supports float types only"
    want = len(a["batch_lhs"]) + len(a["lhs_free"]) + len(a["rhs_free"])
    if res.type.rank != want:
        return f"result rank {res.type.rank}, attrs say {want}"
    if "result_perm" in a and _verify_result_perm(op):
        return _verify_result_perm(op)
    nb = len(a["batch_lhs"])
    free = [lhs.shape[d] for d in a["lhs_free"]] + [rhs.shape[d] for d in a["rhs_free"]]
    if logical_shape(op)[nb:] != free:
        return f"result free dims {logical_shape(op)[nb:]} != operand free dims {free}"
    return None
