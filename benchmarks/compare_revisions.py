"""Runs one benchmark under two builds of blade_disc_tf (e.g. main and a
branch's worktree, each with its op library built) and prints, for every
number of every table the benchmark prints, the two medians and new/old.

A process loads one op library, so the two builds run in separate
processes, alternating (old, new, new, old, ...) so that machine noise hits
them alike; compare ratios the benchmark itself computes against stock TF
in the same process (e.g. "tf/disc"), which cancel most of the noise.

    python benchmarks/compare_revisions.py --old /work/main --new . --rounds 3 \\
        -- fusion_micro.py --repeats 20

--old/--new name a checkout with its op library built (python
tf_disc/build_ops.py there); its package is imported from there through a
temporary folder of links (blade_disc_tf, compiler, runtime), whatever is
installed."""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from typing import Dict, List, Tuple

from platform_info import cpu_summary

HERE = os.path.dirname(os.path.abspath(__file__))
# (table title, row label, column) -> samples
Cells = Dict[Tuple[str, str, str], List[float]]


def _env(checkout: str, links: str) -> dict:
    """The environment importing blade_disc_tf from checkout: links (a new
    folder) gets the package's three import names, pointing into it."""
    src = os.path.join(os.path.abspath(checkout), "tf_disc")
    for name, folder in (("blade_disc_tf", "python"), ("compiler", "compiler"),
                         ("runtime", "runtime")):
        os.symlink(os.path.join(src, folder), os.path.join(links, name))
    env = dict(os.environ)
    env["PYTHONPATH"] = links
    return env


def parse_tables(text: str) -> Cells:
    """The numbers of every timing.print_table table in text: a title line,
    a header line, then rows until a blank line."""
    cells: Cells = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i] == "" and i + 2 < len(lines) and lines[i + 1] and lines[i + 2]:
            title, header = lines[i + 1], lines[i + 2].split()
            j = i + 3
            while j < len(lines) and lines[j].strip():
                row = lines[j].split()
                if len(row) == len(header):
                    for col, value in zip(header[1:], row[1:]):
                        number = _number(value)
                        if number is not None:
                            cells.setdefault((title, row[0], col), []).append(number)
                j += 1
            i = j
        else:
            i += 1
    return cells


def _number(text: str) -> float | None:
    try:
        return float(text.rstrip("x"))
    except ValueError:
        return None


def run(checkout: str, script: List[str]) -> str:
    cmd = [sys.executable, os.path.join(HERE, script[0]), *script[1:]]
    with tempfile.TemporaryDirectory() as links:
        proc = subprocess.run(cmd, env=_env(checkout, links), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: {' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    return proc.stdout


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--old", required=True)
    p.add_argument("--new", required=True)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("script", nargs=argparse.REMAINDER,
                   help="-- benchmark script (in benchmarks/) and its arguments")
    args = p.parse_args()
    script = args.script[1:] if args.script[:1] == ["--"] else args.script
    if not script:
        p.error("no benchmark given")
    samples: Dict[str, Cells] = {"old": {}, "new": {}}
    for r in range(args.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for which in order:
            out = run(getattr(args, which), script)
            for key, values in parse_tables(out).items():
                samples[which].setdefault(key, []).extend(values)
    print(f"CPU: {cpu_summary()}")
    print(f"{' '.join(script)}: {args.rounds} rounds, old={args.old} new={args.new}")
    title = None
    for key in sorted(samples["new"], key=list(samples["new"]).index):
        if key not in samples["old"]:
            continue
        if key[0] != title:
            title = key[0]
            print(f"\n{title}\n{'row':<28} {'column':<16} {'old':>10} {'new':>10} {'new/old':>8}")
        old = statistics.median(samples["old"][key])
        new = statistics.median(samples["new"][key])
        ratio = f"{new / old:8.3f}" if old else "       -"
        print(f"{key[1]:<28} {key[2]:<16} {old:10.4g} {new:10.4g} {ratio}")


if __name__ == "__main__":
    main()
