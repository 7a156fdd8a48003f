"""How every generated kernel is launched: inline on the calling thread when
its total cost is small (a thread hop costs more than the work), else over
TF's intra-op pool through rt->parallel_for.  One rule for all kernel kinds."""
from __future__ import annotations

from typing import List

from ..host_checks import free_temps

# Below this many cycles (units x cost per unit) a kernel runs on the calling
# thread.  The runtime's ParallelFor inlines below the same value
# (kInlineCost in runtime/cpu/runtime.cc; tests/compiler/test_inline_threshold.py
# keeps them equal), so generated code and runtime callers draw one line.
INLINE_COST = 1 << 15


def emit_launch(n: str, cost: str, fn: str, closure: str, indent: str = "      ") -> List[str]:
    """C++ lines running fn(closure, begin, end) over [0, n); n > 0 is checked
    by the caller.  n and cost are C++ expressions (cost per unit); their
    product is taken in double, as the runtime does (no int64 overflow)."""
    return [f"{indent}if (double({n}) * double({cost}) < {INLINE_COST}) {fn}({closure}, 0, {n});",
            f"{indent}else rt->parallel_for(rt->ctx, {n}, {cost}, {fn}, {closure});"]


def emit_units_and_close(op, count: str, work: str, cost: str, fn: str,
                         closure: str) -> List[str]:
    """The end of a library op's block: fn over `count` units (cost each)
    when there are units and `work` > 0, the op's frees, the closing brace."""
    lines = [f"    const int64_t units = {count};", f"    if (units > 0 && {work} > 0) {{",
             *emit_launch("units", cost, fn, closure), "    }"]
    lines += free_temps(op)
    return lines + ["  }"]
