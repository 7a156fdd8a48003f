"""The bf16 fast-math GEMM kernel (runtime/gemm_bf16.cc) alone at BERT-base
shapes, in thread CPU time against the measured vdpbf16ps peak of one core.

Why: on a machine shared with other jobs, wall-time medians of whole models
move by several percent between runs; a kernel's CPU time in one thread
(min of repeats) does not, so it says how far the kernel is from the
instruction's peak and whether a kernel change helps.  The tasks of the
plan RunGemmBf16 makes for --threads threads run one after another here
(per-task efficiency; load balance is not measured).  Builds
benchmarks/gemm_bf16_cpu.cc with g++ (the flags of this machine's kernel
library, kernel_build.py) into a temporary directory.

    python benchmarks/gemm_bf16_cpu.py [--tokens 128 512 2048] [--seqs 128 256] [--repeats 7]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from typing import List, Tuple

import kernel_build
from timing import print_table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HIDDEN, FFN, HEADS = 768, 3072, 12


def build(out_dir: str) -> str:
    """The driver binary, built against this checkout's kernel."""
    exe = os.path.join(out_dir, "gemm_bf16_cpu")
    subprocess.run(["g++", *kernel_build.kernel_flags(), "-std=c++17", f"-I{ROOT}",
                    os.path.join(ROOT, "tf_disc/runtime/gemm_bf16.cc"),
                    os.path.join(ROOT, "tf_disc/runtime/switches.cc"),
                    os.path.join(ROOT, "benchmarks/gemm_bf16_cpu.cc"), "-o", exe], check=True)
    return exe


def shapes(tokens: List[int], seqs: List[int]) -> List[Tuple[str, int, int, int, int, int, int]]:
    """(name, batch, m, n, k, trans_b, packed_b): the weight GEMMs (B packed
    once, as for a variable) per token count, the attention ones per
    sequence length at batch 8."""
    out = []
    for t in tokens:
        out += [("proj", 1, t, HIDDEN, HIDDEN, 0, 1), ("ffn_up", 1, t, FFN, HIDDEN, 0, 1),
                ("ffn_down", 1, t, HIDDEN, FFN, 0, 1)]
    d = HIDDEN // HEADS
    for s in seqs:
        out += [("scores", 8 * HEADS, s, s, d, 1, 0), ("context", 8 * HEADS, s, d, s, 0, 0)]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[128, 512, 2048])
    parser.add_argument("--seqs", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2, help="task plan made for this many")
    args = parser.parse_args()
    cases = shapes(args.tokens, args.seqs)
    with tempfile.TemporaryDirectory() as tmp:
        argv = [build(tmp), str(args.repeats), str(args.threads)]
        for case in cases:
            argv += [str(v) for v in case[1:]]
        lines = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.split("\n")
    if lines[0] == "unavailable":
        print("no AVX512_BF16 on this CPU: the kernel does not run")
        return 0
    peak = float(lines[0].split()[1])
    rows = []
    for (name, *_), line in zip(cases, lines[1:]):
        batch, m, n, k, trans_b, packed, sec, err = line.split()
        flops = 2.0 * int(batch) * int(m) * int(n) * int(k)
        bound = 2**-7 + 2**-15 + int(k) * 2**-23
        rows.append({"gemm": name, "batch": int(batch), "m": int(m), "n": int(n), "k": int(k),
                     "B": ("packed " if packed == "1" else "") + ("trans" if trans_b == "1" else "row"),
                     "ms": float(sec) * 1e3, "GF/s": flops / float(sec) / 1e9,
                     "of_peak": f"{flops / float(sec) / peak:.0%}",
                     "max_err": f"{float(err):.1e}", "err/bound": f"{float(err) / bound:.2f}"})
    print_table(f"bf16 GEMM kernel, one thread's CPU time (min of {args.repeats}); "
                f"measured vdpbf16ps peak {peak / 1e9:.0f} GF/s per core", rows)
    total = sum(r["ms"] for r in rows)
    print(f"\nsum of times: {total:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
