"""MatMul, BatchMatMul(V2/V3) and Einsum -> the `dot` IR op (ir/dot.py),
which codegen turns into an rt->gemm call.  Transposes/adjoints become the
GEMM's transpose flags (codegen picks them from which operand dim is
innermost), batch dims broadcast like BatchMatMulV2 (size-1 dims at run
time too), and sizes are checked at run time with TF's messages."""
from __future__ import annotations

from ..dtypes import FLOATS
from ..errors import Unsupported
from .rule import OpRule

_SIZE_MSG = "Matrix size-incompatible: In[0]: {0}, In[1]: {1}"
_BATCH_MSG = "In[0] and In[1] must have compatible batch dimensions: {0} vs. {1}"


def emit_dot(b, node, lhs, rhs, batch_lhs, batch_rhs, lhs_free, lhs_contract,
             rhs_contract, rhs_free, broadcast_batch=True):
    """Checks contract sizes and batch compatibility, returns the dot value."""
    for dl, dr in zip(lhs_contract, rhs_contract):
        b.assert_dim_eq(lhs, dl, rhs, dr, node.name, node.op, _SIZE_MSG, show_shapes=True)
    ls = ["1" if d < 0 else lhs.shape[d] for d in batch_lhs]
    rs = ["1" if d < 0 else rhs.shape[d] for d in batch_rhs]
    if broadcast_batch:
        if b.env.needs_broadcast_check(tuple(ls), tuple(rs)):
            from ..ir.core import Op
            b.ops.append(Op("assert_broadcastable", [], [], {
                "node": node.name, "op": node.op, "msg": _BATCH_MSG,
                "lhs": ls, "rhs": rs, "lhs_shape": list(lhs.shape),
                "rhs_shape": list(rhs.shape)}))
        batch = list(b.env.broadcast_shapes(tuple(ls), tuple(rs)))
    else:
        for i, (dl, dr) in enumerate(zip(batch_lhs, batch_rhs)):
            b.assert_dim_eq(lhs, dl, rhs, dr, node.name, node.op,
                            f"In[0].dim({i}) and In[1].dim({i}) must be the same: "
                            "{0} vs {1}", show_shapes=True)
        batch = [b.env.canon(d) for d in ls]
    shape = tuple(batch + [lhs.shape[d] for d in lhs_free] + [rhs.shape[d] for d in rhs_free])
    return b.emit("dot", [lhs, rhs], lhs.dtype, shape, batch_lhs=list(batch_lhs),
                  batch_rhs=list(batch_rhs), lhs_free=list(lhs_free),
                  lhs_contract=list(lhs_contract), rhs_contract=list(rhs_contract),
                  rhs_free=list(rhs_free))


def _matrix_dims(rank: int, transposed: bool) -> tuple[list[int], list[int]]:
    """(rows, cols) of the last two dims, after an optional transpose."""
    r, c = rank - 2, rank - 1
    return ([c], [r]) if transposed else ([r], [c])


def lower_matmul(b, node, xs):
    lhs, rhs = xs
    if lhs.type.rank != 2 or rhs.type.rank != 2:
        raise Unsupported(f"MatMul node '{node.name}': operands must be matrices")
    lf, lc = _matrix_dims(2, bool(node.attrs.get("transpose_a", False)))
    rc, rf = _matrix_dims(2, bool(node.attrs.get("transpose_b", False)))
    return [emit_dot(b, node, lhs, rhs, [], [], lf, lc, rc, rf)]


def _lower_batch_matmul(broadcast: bool):
    def lower(b, node, xs):
        lhs, rhs = xs
        rl, rr = lhs.type.rank, rhs.type.rank
        if rl < 2 or rr < 2:
            raise Unsupported(f"{node.op} node '{node.name}': operands must be at least 2-D")
        if not broadcast and rl != rr:
            raise Unsupported(f"{node.op} node '{node.name}': ranks differ")
        if node.op == "BatchMatMulV3" and len({node.attrs.get(a) for a in ("Ta", "Tb", "Tout")}) != 1:
            raise Unsupported(f"BatchMatMulV3 node '{node.name}': mixed dtypes")
        nb = max(rl, rr) - 2
        bl = [i - (nb - (rl - 2)) if i >= nb - (rl - 2) else -1 for i in range(nb)]
        br = [i - (nb - (rr - 2)) if i >= nb - (rr - 2) else -1 for i in range(nb)]
        lf, lc = _matrix_dims(rl, bool(node.attrs.get("adj_x", False)))
        rc, rf = _matrix_dims(rr, bool(node.attrs.get("adj_y", False)))
        return [emit_dot(b, node, lhs, rhs, bl, br, lf, lc, rc, rf, broadcast)]
    return lower


# -- Einsum ------------------------------------------------------------------

def _group(labels: str, chosen: list[str]) -> list[int] | None:
    """Positions of `chosen` labels in `labels`, if they form a consecutive
    run in that order (empty -> None)."""
    if not chosen:
        return None
    start = labels.find(chosen[0])
    pos = list(range(start, start + len(chosen)))
    if start < 0 or pos[-1] >= len(labels) or [labels[p] for p in pos] != chosen:
        return None
    return pos


def einsum_plan(equation: str) -> tuple[dict | None, str]:
    """Equation -> (dot attrs with "swap": operands exchanged, "") or
    (None, reason) for equations left to TF."""
    eq = equation.replace(" ", "")
    if "." in eq:
        return None, "ellipsis"
    if "->" not in eq:
        return None, "implicit output"
    ins, out = eq.split("->")
    parts = ins.split(",")
    if len(parts) != 2:
        return None, f"{len(parts)} operands (only 2 are lowered)"
    lhs, rhs = parts
    for s in (lhs, rhs, out):
        if len(set(s)) != len(s):
            return None, "repeated label in one operand (diagonal/trace)"
    if set(out) - set(lhs) - set(rhs):
        return None, "output label missing from the inputs"
    for s in (lhs, rhs):
        if set(s) - set(out) - (set(lhs) & set(rhs)):
            return None, "label summed within one operand (reduction)"
    batch = [c for c in out if c in lhs and c in rhs]
    contract = [c for c in lhs if c in rhs and c not in out]
    lfree = [c for c in out if c in lhs and c not in rhs]
    rfree = [c for c in out if c in rhs and c not in lhs]
    if not contract or not lfree or not rfree:
        return None, "needs a contracted label and a free label on each side"
    # Output: batch labels first, then one side's free run, then the other's.
    nb = len(batch)
    if list(out[:nb]) != batch:
        return None, "batch labels must lead the output"
    rest = out[nb:]
    swap = rest[:len(lfree)] != "".join(lfree)
    if swap:
        if rest != "".join(rfree) + "".join(lfree):
            return None, "free labels of each operand must be contiguous in the output"
        lhs, rhs, lfree, rfree = rhs, lhs, rfree, lfree
    elif rest != "".join(lfree) + "".join(rfree):
        return None, "free labels of each operand must be contiguous in the output"
    groups = {}
    for side, labels, free in (("lhs", lhs, lfree), ("rhs", rhs, rfree)):
        f = _group(labels, free)
        c = _group(labels, [x for x in lhs if x in contract])  # pairs in lhs order
        if f is None:
            return None, f"free labels of {labels!r} must be adjacent, in output order"
        if c is None:
            return None, f"contracted labels of {labels!r} must be adjacent, in the same order"
        if len(labels) - 1 not in f + c:
            return None, f"last label of {labels!r} is a batch label (would need a copy)"
        groups[side] = (f, c)
    return {"swap": swap,
            "batch_lhs": [lhs.index(c) for c in batch], "batch_rhs": [rhs.index(c) for c in batch],
            "lhs_free": groups["lhs"][0], "lhs_contract": groups["lhs"][1],
            "rhs_contract": groups["rhs"][1], "rhs_free": groups["rhs"][0]}, ""


class _DotEquations:
    """attr_values entry for Einsum's equation: `in` runs einsum_plan (the
    frontend's attr check), iterating gives the token the C++ support table
    knows ("<einsum_dot>": its EinsumIsDot mirrors einsum_plan), so other
    equations stay out of clusters."""

    TOKEN = "<einsum_dot>"

    def __contains__(self, equation) -> bool:
        return isinstance(equation, str) and einsum_plan(equation)[0] is not None

    def __iter__(self):
        return iter((self.TOKEN,))


def lower_einsum(b, node, xs):
    if len(xs) != 2:
        raise Unsupported(f"Einsum node '{node.name}': {len(xs)} operands")
    plan, reason = einsum_plan(str(node.attrs.get("equation", "")))
    if plan is None:
        raise Unsupported(f"Einsum node '{node.name}': equation "
                          f"{node.attrs.get('equation')!r} not lowered: {reason}")
    lhs, rhs = (xs[1], xs[0]) if plan["swap"] else (xs[0], xs[1])
    attrs = {k: v for k, v in plan.items() if k != "swap"}
    # Operand ranks must match the equation.
    if len(attrs["batch_lhs"]) + len(attrs["lhs_free"]) + len(attrs["lhs_contract"]) != lhs.type.rank \
            or len(attrs["batch_rhs"]) + len(attrs["rhs_free"]) + len(attrs["rhs_contract"]) != rhs.type.rank:
        raise Unsupported(f"Einsum node '{node.name}': operand ranks do not match the equation")
    return [emit_dot(b, node, lhs, rhs, **attrs)]


def _rank_rule(rank_fn):
    def rule(env, shapes, attrs):
        return [tuple(["?"] * rank_fn(shapes, attrs))]
    return rule


def _einsum_rank(shapes, attrs):
    return len(str(attrs.get("equation", "->")).split("->")[-1].strip())


RULES = [
    OpRule("MatMul", lower_matmul, {"T": FLOATS}, fusion="library",
           shape_rule=_rank_rule(lambda s, a: 2)),
    OpRule("BatchMatMul", _lower_batch_matmul(False), {"T": FLOATS}, fusion="library",
           shape_rule=_rank_rule(lambda s, a: len(s[0]))),
    OpRule("BatchMatMulV2", _lower_batch_matmul(True), {"T": FLOATS}, fusion="library",
           shape_rule=_rank_rule(lambda s, a: max(len(s[0]), len(s[1])))),
    OpRule("BatchMatMulV3", _lower_batch_matmul(True),
           {"Ta": FLOATS, "Tb": FLOATS, "Tout": FLOATS}, fusion="library",
           dtype_rule=lambda dts, attrs: [dts[0]],
           shape_rule=_rank_rule(lambda s, a: max(len(s[0]), len(s[1])))),
    OpRule("Einsum", lower_einsum, {"T": FLOATS}, fusion="library",
           attr_values={"N": (2,), "equation": _DotEquations()},
           shape_rule=_rank_rule(_einsum_rank)),
]
