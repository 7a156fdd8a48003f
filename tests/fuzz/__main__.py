"""python -m tests.fuzz --cases N --seed S [-v] [--max-steps K]

Prints a reproducer per failure, then `N passed, M failed`."""
from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzz")
    p.add_argument("--cases", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-steps", type=int, default=8)
    p.add_argument("--cache-dir", default=None)
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--subnormals", action="store_true",
                   help="also feed subnormal floats (known differences, see generator.py)")
    args = p.parse_args(argv)
    if args.subnormals:
        from .generator import use_subnormals
        use_subnormals()
    from .runner import GRAPH_MODE_DIFFS, ILL_CONDITIONED, run_cases, total_fallbacks

    t0 = time.monotonic()
    passed, failures, stats = run_cases(args.cases, args.seed, args.verbose, args.max_steps,
                                        args.cache_dir)
    reasons = total_fallbacks(stats)
    clusters = stats.get("clusters", {}).values()
    print("disc: %d clusters, %d compiles, %d runs, %d fallbacks" % (
        len(clusters), sum(c["compiles"] for c in clusters), sum(c["runs"] for c in clusters),
        sum(c["fallbacks"] for c in clusters)))
    if reasons:
        print("fallback reasons:", {k[:120]: v for k, v in sorted(reasons.items())})
    if ILL_CONDITIONED:
        print(f"excused as ill-conditioned (float32 TF as far from float64 as we are): "
              f"seeds {ILL_CONDITIONED[:20]}")
    if GRAPH_MODE_DIFFS:
        print(f"excused: stock TF graph mode (no blade_disc_tf) gives our answer, eager "
              f"differs (Grappler rewrite): seeds {GRAPH_MODE_DIFFS[:20]}")
    print(f"{passed} passed, {len(failures)} failed ({time.monotonic() - t0:.0f}s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
