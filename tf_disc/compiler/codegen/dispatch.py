"""How every generated kernel is launched: inline on the calling thread when
its total cost is small (a thread hop costs more than the work), else over
TF's intra-op pool through rt->parallel_for.  One rule for all kernel kinds."""
from __future__ import annotations

from typing import List

# Below this many cost units a kernel runs on the calling thread.
INLINE_COST = 1 << 15


def emit_launch(n: str, cost: str, fn: str, closure: str, indent: str = "      ") -> List[str]:
    """C++ lines running fn(closure, begin, end) over [0, n); n > 0 is checked
    by the caller.  n and cost are C++ expressions (cost per unit)."""
    return [f"{indent}if ({n} * ({cost}) < {INLINE_COST}) {fn}({closure}, 0, {n});",
            f"{indent}else rt->parallel_for(rt->ctx, {n}, {cost}, {fn}, {closure});"]
