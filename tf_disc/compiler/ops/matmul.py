"""MatMul, BatchMatMul(V2/V3) and Einsum -> the `dot` IR op (ir/dot.py),
which codegen turns into an rt->gemm call.  Transposes/adjoints become the
GEMM's transpose flags (codegen picks them from which operand dim is
innermost), batch dims broadcast like BatchMatMulV2 (size-1 dims at run
time too), and sizes are checked at run time with TF's messages.  A
two-operand Einsum is one dot between transposes (einsum_plan) that
fold_transposes turns into GEMM layouts."""
from __future__ import annotations

from ..dtypes import FLOATS
from ..errors import Unsupported
from ..shapes.symbolic import dim_mul
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

_ELLIPSIS_LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def _split_terms(eq: str) -> tuple[list[str] | None, str]:
    """[lhs, rhs, out] with "..." kept, or (None, reason)."""
    if "->" not in eq:
        return None, "implicit output"
    ins, out = eq.split("->", 1)
    terms = ins.split(",") + [out]
    if len(terms) != 3:
        return None, f"{len(terms) - 1} operands (only 2 are lowered)"
    for t in terms:
        if t.count("...") > 1 or "." in t.replace("...", "", 1) or "-" in t or ">" in t:
            return None, "malformed ellipsis"
    if "..." in terms[0] + terms[1] and "..." not in terms[2]:
        return None, "ellipsis summed (reduction)"
    if "..." in terms[2] and "..." not in terms[0] + terms[1]:
        return None, "output ellipsis without an input one"
    return terms, ""


def _expand(terms: list[str], ranks: tuple[int, int] | None) -> list[str]:
    """Ellipses replaced by fresh labels, right-aligned as numpy broadcasts
    them; without ranks one label stands for every ellipsis (syntax check)."""
    fresh = [c for c in _ELLIPSIS_LABELS if c not in "".join(terms)]
    if ranks is None:
        return [t.replace("...", fresh[0]) for t in terms]
    n = [max(r - (len(t) - 3), 0) if "..." in t else 0 for t, r in zip(terms, ranks)]
    labels = "".join(fresh[:max(n)])
    return [terms[0].replace("...", labels[len(labels) - n[0]:]),
            terms[1].replace("...", labels[len(labels) - n[1]:]),
            terms[2].replace("...", labels)]


def einsum_plan(equation: str, ranks: tuple[int, int] | None = None) -> tuple[dict | None, str]:
    """Equation (and operand ranks, for ellipses) -> (plan, "") or (None,
    reason) for equations left to TF.

    Any two-operand equation without repeated labels or labels summed within
    one operand is one dot: each operand transposed to (batch, free,
    contract) / (batch, contract, free), the product transposed to the output
    order (fold_transposes makes these layouts, not copies).  A missing
    group (no contracted label: outer product; no free label: matrix-vector)
    is a unit dim ("unit": labels appended to lhs, rhs, dropped from the
    product).  Ellipsis dims broadcast ("broadcast": labels allowed size 1
    on one side).  Plan: "swap" (operands exchanged so the output's last free
    label is the GEMM's rhs side), "lhs"/"rhs" (labels after the swap, units
    appended), "lhs_perm", "rhs_perm", "out_perm" (product -> output order,
    units last) and the group sizes "batch", "lfree", "contract", "rfree"."""
    terms, reason = _split_terms(equation.replace(" ", ""))
    if terms is None:
        return None, reason
    if ranks is not None and any(len(t) != r if "..." not in t else len(t) - 3 > r
                                 for t, r in zip(terms, ranks)):
        return None, "operand ranks do not match the equation"
    lhs, rhs, out = _expand(terms, ranks)
    broadcast = [c for c in out if c not in "".join(terms)] if ranks is not None else []
    for s in (lhs, rhs, out):
        if len(set(s)) != len(s):
            return None, "repeated label in one operand (diagonal/trace)"
    if set(out) - set(lhs) - set(rhs):
        return None, "output label missing from the inputs"
    for s in (lhs, rhs):
        if set(s) - set(out) - (set(lhs) & set(rhs)):
            return None, "label summed within one operand (reduction)"
    swap = bool(out) and out[-1] in lhs and out[-1] not in rhs
    if swap:
        lhs, rhs = rhs, lhs
    batch = [c for c in out if c in lhs and c in rhs]
    contract = [c for c in lhs if c in rhs and c not in out]
    lfree = [c for c in out if c in lhs and c not in rhs]
    rfree = [c for c in out if c in rhs and c not in lhs]
    unit = [c for c in _ELLIPSIS_LABELS if c not in lhs + rhs + out][:3]
    units = {"lhs": "", "rhs": ""}
    for group, side, label in ((contract, "lhs rhs", unit[0]), (lfree, "lhs", unit[1]),
                               (rfree, "rhs", unit[2])):
        if not group:
            group.append(label)
            for k in side.split():
                units[k] += label
    lhs, rhs = lhs + units["lhs"], rhs + units["rhs"]
    logical = batch + lfree + rfree
    ordered = list(out) + [c for c in logical if c not in out]
    return {"swap": swap, "lhs": lhs, "rhs": rhs, "units": units, "broadcast": broadcast,
            "lhs_perm": [lhs.index(c) for c in batch + lfree + contract],
            "rhs_perm": [rhs.index(c) for c in batch + contract + rfree],
            "out_perm": [logical.index(c) for c in ordered], "out_rank": len(out),
            "batch": len(batch), "lfree": len(lfree), "contract": len(contract),
            "rfree": len(rfree)}, ""


def _transposed(b, x, perm: list[int]):
    """x with dims permuted: a strided view (free when a dot reads or writes it)."""
    if perm == list(range(len(perm))):
        return x
    strides = [dim_mul(*x.shape[k + 1:]) if k + 1 < len(x.shape) else "1"
               for k in range(len(x.shape))]
    return b.emit("view", [x], x.dtype, tuple(x.shape[p] for p in perm),
                  strides=[strides[p] for p in perm], base="0")


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


def _with_units(b, x, count: int):
    """x with `count` trailing size-1 dims (a unit group of the plan)."""
    return x if not count else b.emit("reshape", [x], x.dtype, x.shape + ("1",) * count)


def lower_einsum(b, node, xs):
    if len(xs) != 2:
        raise Unsupported(f"Einsum node '{node.name}': {len(xs)} operands")
    equation = str(node.attrs.get("equation", ""))
    plan, reason = einsum_plan(equation, (xs[0].type.rank, xs[1].type.rank))
    if plan is None:
        raise Unsupported(f"Einsum node '{node.name}': equation {equation!r} not lowered: "
                          f"{reason}")
    lhs, rhs = (xs[1], xs[0]) if plan["swap"] else (xs[0], xs[1])
    ul, ur = len(plan["units"]["lhs"]), len(plan["units"]["rhs"])
    # A named label has one size in both operands (TF's check and wording);
    # ellipsis dims broadcast (the dot's batch broadcasting).
    la, lb = plan["lhs"][:len(plan["lhs"]) - ul], plan["rhs"][:len(plan["rhs"]) - ur]
    first, second = (lb, la) if plan["swap"] else (la, lb)
    for c in first:
        if c in second and c not in plan["broadcast"]:
            b.assert_dim_eq(xs[0], first.index(c), xs[1], second.index(c), node.name, node.op,
                            "Expected dimension {0} at axis %d of input 1 but got dimension {1}"
                            % second.index(c))
    nb, nl, nc, nr = plan["batch"], plan["lfree"], plan["contract"], plan["rfree"]
    product = emit_dot(b, node, _transposed(b, _with_units(b, lhs, ul), plan["lhs_perm"]),
                       _transposed(b, _with_units(b, rhs, ur), plan["rhs_perm"]),
                       list(range(nb)), list(range(nb)), list(range(nb, nb + nl)),
                       list(range(nb + nl, nb + nl + nc)), list(range(nb, nb + nc)),
                       list(range(nb + nc, nb + nc + nr)))
    out = _transposed(b, product, plan["out_perm"])
    if out.type.rank > plan["out_rank"]:  # drop the unit free dims (last)
        out = b.emit("reshape", [out], out.dtype, out.shape[:plan["out_rank"]])
    return [out]


def _rank_rule(rank_fn):
    def rule(env, shapes, attrs):
        return [tuple(["?"] * rank_fn(shapes, attrs))]
    return rule


def _einsum_rank(shapes, attrs):
    out = str(attrs.get("equation", "->")).replace(" ", "").split("->")[-1]
    if "..." not in out:
        return len(out)
    ins = str(attrs.get("equation", "")).replace(" ", "").split("->")[0].split(",")
    dims = [len(s) - len(t.replace("...", "")) for s, t in zip(shapes, ins) if "..." in t]
    return len(out) - 3 + max(dims, default=0)


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
