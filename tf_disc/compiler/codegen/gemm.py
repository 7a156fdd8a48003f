"""Host code for `dot` ops (ir/dot.py): one rt->gemm call per run of batch
dims that share strides (usually one call), through disc_gemm_batched
(runtime/host/disc_gemm.h); an epilogue kernel (passes/gemm_epilogue.py)
goes in the call's DiscGemmArgs, and the runtime runs it on each piece of C
as soon as it is computed; a group of dots that share lhs
(passes/merge_gemm.py) is one rt->gemm_multi.

Operands are dense row-major buffers; each free/contract group collapses to
one matrix dim whose stride is that of its last dim.  The transpose flag of
an operand is static: its last dim is a contract dim (lhs; rows contiguous)
or a free dim (rhs); otherwise the GEMM reads it transposed.  Batch strides
are 0 for absent or size-1 (at run time) dims."""
from __future__ import annotations

from typing import Callable

from ..ir.core import Op, Value
from ..ir.dot import logical_shape
from .host_checks import free_temps

# The header with disc_gemm_batched, included by libraries with a dot.
GEMM_HEADER = '#include "host/disc_gemm.h"'


def needs_helper(ops) -> bool:
    return any(op.name == "dot" for op in ops)


def _prod(xs: list[str]) -> str:
    return " * ".join(f"({x})" for x in xs) or "int64_t(1)"


def _stride(dims: list[str], d: int) -> str:
    """Row-major element stride of dim d."""
    return _prod(dims[d + 1:])


def library_dtype(op: Op) -> str:
    """The dtype a library call (rt->gemm, rt->window) gets for op: the
    element type, plus the bf16 flag where passes/fast_math.py marked it."""
    dtype = str(op.result.dtype.tf_enum)
    return f"{dtype} | DISC_GEMM_FAST_BF16" if op.attrs.get("precision") == "bf16" else dtype


def emit_dot_with_epilogue(op: Op, dn, ptr: dict[Value, str], k: int, kernel: str,
                           launch: Callable[[Callable[[str], list[str]]], list[str]]
                           ) -> list[str]:
    """Host lines for a dot whose epilogue is the loop kernel `kernel`:
    launch(run) sets up the kernel's closure and calls run(closure) where
    it would launch it (codegen/cpu/host.py); run emits the dot with it."""
    for v in (*op.operands, op.result):  # dim locals before the kernel's scope
        for d in v.shape:
            dn(d)
    for d in logical_shape(op):
        dn(d)
    out = list(dn.lines)
    dn.lines = []
    return out + launch(lambda closure: emit_dot(op, dn, ptr, k, (kernel, closure)))


def _geometry(op: Op, dn) -> dict[str, str]:
    """The GEMM's C++ sizes, leading dims and transpose flags for dot op
    (its dim locals go to dn.lines)."""
    a = op.attrs
    lhs, rhs = op.operands
    res = op.result
    # Dim expressions first: DimNames may emit locals, which must be in the
    # enclosing scope (later users refer to them too).
    ld = [dn(d) for d in lhs.shape]
    rd = [dn(d) for d in rhs.shape]
    od = [dn(d) for d in logical_shape(op)]
    # element stride of each logical result dim in the (maybe permuted) result
    phys = [dn(d) for d in res.shape]
    perm = a.get("result_perm", list(range(len(phys))))
    ostride = [_stride(phys, perm.index(i)) for i in range(len(phys))]
    nb = len(a["batch_lhs"])
    ta = (lhs.type.rank - 1) in a["lhs_free"]       # lhs rows not contiguous
    tb = (rhs.type.rank - 1) in a["rhs_contract"]   # rhs stored n x k

    def bstride(dims, d):
        return "int64_t(0)" if d < 0 else f"({dims[d]} == 1 ? int64_t(0) : {_stride(dims, d)})"

    return {
        "ta": str(int(ta)), "tb": str(int(tb)),
        "lda": _stride(ld, a["lhs_contract"][-1] if ta else a["lhs_free"][-1]),
        "ldb": _stride(rd, a["rhs_free"][-1] if tb else a["rhs_contract"][-1]),
        "m": _prod([ld[d] for d in a["lhs_free"]]),
        "n": _prod([rd[d] for d in a["rhs_free"]]),
        "k": _prod([ld[d] for d in a["lhs_contract"]]),
        "ldc": ostride[nb] if a["lhs_free"] and "result_perm" in a else "n",
        "bd": od[:nb], "sa": [bstride(ld, d) for d in a["batch_lhs"]],
        "sb": [bstride(rd, d) for d in a["batch_rhs"]], "sc": ostride[:nb]}


def emit_dot(op: Op, dn, ptr: dict[Value, str], k: int,
             epilogue: tuple[str, str] | None = None, bias: str = "nullptr",
             activation: str = "DISC_ACT_NONE", c_ptr: str | None = None) -> list[str]:
    """Host lines for one dot (dn: DimNames, ptr: value -> C++ pointer);
    epilogue: (kernel function, closure pointer) run on C's tiles; bias
    (an n-vector) and activation: the GEMM's own epilogue (device targets);
    c_ptr: C's pointer when not the dot result's own buffer."""
    lhs, rhs = op.operands
    res = op.result
    g = _geometry(op, dn)
    out = list(dn.lines)
    dn.lines = []
    nb = len(op.attrs["batch_lhs"])

    ep = f"{epilogue[0]}, {epilogue[1]}" if epilogue else "nullptr, nullptr"
    own = "" if (bias, activation) == ("nullptr", "DISC_ACT_NONE") else f", {bias}, {activation}"

    def arr(name, items):
        return f"const int64_t {name}[{max(len(items), 1)}] = {{{', '.join(items) or '0'}}};"

    out += [f"  {{  // dot {k}: {res.name}",
            f"    {arr('bd', g['bd'])}", f"    {arr('sa', g['sa'])}", f"    {arr('sb', g['sb'])}",
            f"    {arr('sc', g['sc'])}",
            f"    const int64_t m = {g['m']}, n = {g['n']}, k = {g['k']};",
            f"    const DiscGemmArgs g = {{{library_dtype(op)}, {g['ta']}, {g['tb']}, 1, m, n, k, "
            f"{ptr[lhs]}, {g['lda']}, 0, {ptr[rhs]}, {g['ldb']}, 0, {c_ptr or ptr[res]}, {g['ldc']}, 0, "
            f"{ep}, 0{own}}};",
            f"    if (disc_gemm_batched(rt, g, {nb}, bd, sa, sb, sc, {res.dtype.itemsize})) "
            "return 1;"]
    out += free_temps(op)
    out.append("  }")
    return out


class DotGroups:
    """Collects the members of a merged dot group (passes/merge_gemm.py:
    contiguous, each dot followed by its epilogue kernel) as host code is
    emitted, until the group is complete."""

    def __init__(self) -> None:
        self.members: list[list] = []          # [dot, epilogue kernel or None]
        self.waiting: dict[str, list] = {}     # dot result name -> its member

    def take(self, op: Op) -> bool:
        """Whether op is a group member (dot) or a member's epilogue; holds it."""
        if op.name == "dot" and "gemm_group" in op.attrs:
            self.members.append([op, None])
            if "epilogue" in op.attrs:
                self.waiting[op.result.name] = self.members[-1]
            return True
        if op.name == "fusion" and op.attrs.get("epilogue_of") in self.waiting:
            self.waiting.pop(op.attrs["epilogue_of"])[1] = op
            return True
        return False

    def complete(self) -> bool:
        if not self.members or self.waiting:
            return False
        _, i, size = self.members[-1][0].attrs["gemm_group"]
        return i == size - 1

    def pop(self) -> list[tuple[Op, Op | None]]:
        out, self.members = [(d, e) for d, e in self.members], []
        return out


def emit_dot_group(members: list[tuple[Op, Op | None]], dn, ptr: dict[Value, str],
                   kernel_name: Callable[[Op], str], prepare: Callable[[Op], None],
                   launch: Callable[[Op, Callable[[str], list[str]]], list[str]]) -> list[str]:
    """Host lines for one rt->gemm_multi over members (dot, its epilogue kernel
    or None), which share lhs and layout: each epilogue's closure is set up
    (launch(kernel, run), nested) and the call emitted innermost.
    prepare(kernel) declares the kernel's dim locals up front (in this scope)."""
    dots = [d for d, _ in members]
    dtypes = {library_dtype(d) for d in dots}
    if len(dtypes) != 1 or len({d.operands[0] for d in dots}) != 1:
        raise ValueError(f"gemm group {[d.result.name for d in dots]}: mixed lhs or dtype")
    geoms = [_geometry(d, dn) for d in dots]
    for _, ep in members:
        if ep is not None:
            prepare(ep)
    out = list(dn.lines)
    dn.lines = []
    g0, lhs, dtype = geoms[0], dots[0].operands[0], dtypes.pop()

    def call(closures: list[str | None]) -> list[str]:
        lines = [f"  {{  // dots {', '.join(d.result.name for d in dots)}: one rt->gemm_multi",
                 f"    const int64_t m = {g0['m']}, k = {g0['k']};",
                 f"    const DiscGemmPart parts[{len(dots)}] = {{"]
        for (dot, ep), g, c in zip(members, geoms, closures):
            ldc = g["n"] if g["ldc"] == "n" else g["ldc"]
            fn = f"{kernel_name(ep)}, {c}" if ep is not None else "nullptr, nullptr"
            lines.append(f"      {{{ptr[dot.operands[1]]}, {g['ldb']}, {g['n']}, "
                         f"{ptr[dot.result]}, {ldc}, {fn}, 0}},")
        lines += ["    };",
                  f"    const DiscGemmMultiArgs g = {{{dtype}, {g0['ta']}, {g0['tb']}, m, k, "
                  f"{ptr[lhs]}, {g0['lda']}, {len(dots)}, parts}};",
                  "    if (m > 0 && rt->gemm_multi(rt->ctx, &g)) return 1;"]
        return lines + free_temps(*dots) + ["  }"]

    def nest(i: int, closures: list[str | None]) -> list[str]:
        if i == len(members):
            return call(closures)
        ep = members[i][1]
        if ep is None:
            return nest(i + 1, closures + [None])
        return launch(ep, lambda c: nest(i + 1, closures + [c]))

    return out + nest(0, [])
