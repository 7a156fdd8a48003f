"""One inline threshold: generated code (codegen/cpu/dispatch.py) and the
runtime's ParallelFor (runtime/cpu/runtime.cc) run a range on the calling
thread below the same cost, and the generated test cannot overflow."""
import os
import re

from blade_disc_tf.compiler.codegen.cpu import dispatch

RUNTIME_CC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "tf_disc", "runtime", "cpu", "runtime.cc")


def test_runtime_and_generated_code_share_the_inline_cost():
    with open(RUNTIME_CC) as f:
        src = f.read()
    m = re.search(r"constexpr double kInlineCost = (\d+);", src)
    assert m, "kInlineCost not found in runtime.cc"
    assert float(m.group(1)) == dispatch.INLINE_COST
    assert "< kInlineCost" in src  # ParallelFor compares against it


def test_launch_test_is_taken_in_double():
    lines = dispatch.emit_launch("n", "c", "f", "&k")
    assert lines[0].strip().startswith(f"if (double(n) * double(c) < {dispatch.INLINE_COST})")
    assert "rt->parallel_for(rt->ctx, n, c, f, &k)" in lines[1]
