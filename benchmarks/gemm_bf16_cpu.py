"""The bf16 fast-math GEMM kernel (runtime/cpu/gemm_bf16.cc) alone at BERT-base
shapes, in thread CPU time, each of its paths this CPU has side by side:
VDPBF16PS (AVX512_BF16; with the measured VDPBF16PS peak of one core) and
AMX tiles (runtime/cpu/gemm_amx.cc).

Why: on a machine shared with other jobs, wall-time medians of whole models
move by several percent between runs; a kernel's CPU time in one thread
(min of repeats) does not, so it says how far the kernel is from the
instruction's peak and whether a kernel change helps.  The tasks of the
plan RunGemmBf16 makes for --threads threads run one after another here
(per-task efficiency; load balance is not measured).  Builds
benchmarks/gemm_bf16_cpu.cc with g++ (the flags of this machine's kernel
library, kernel_build.py) into a temporary directory.

    python benchmarks/gemm_bf16_cpu.py [--tokens 128 512 2048] [--seqs 128 256] [--repeats 7]
        [--kernels amx avx512_bf16]
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
                    os.path.join(ROOT, "tf_disc/runtime/cpu/gemm_bf16.cc"),
                    os.path.join(ROOT, "tf_disc/runtime/cpu/gemm_amx.cc"),
                    os.path.join(ROOT, "tf_disc/runtime/cpu/kernel_policy.cc"),
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


KERNELS = {"avx512_bf16": 3, "amx": 4}  # path -> highest cpu_isa.h CpuTier it may use


def run_driver(exe: str, repeats: int, threads: int, kernel: str, cases) -> Tuple[str, float, list]:
    """(the path that ran, the VDPBF16PS peak, one (seconds, max_err) per case);
    ("", 0, []) where the CPU has no bf16 kernel at all."""
    argv = [exe, str(repeats), str(threads), str(KERNELS[kernel])]
    for case in cases:
        argv += [str(v) for v in case[1:]]
    lines = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.split("\n")
    if lines[0] == "unavailable":
        return "", 0.0, []
    _, peak, ran = lines[0].split()
    return ran, float(peak), [(float(ln.split()[6]), float(ln.split()[7])) for ln in lines[1:len(cases) + 1]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[128, 512, 2048])
    parser.add_argument("--seqs", type=int, nargs="+", default=[128, 256])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=2, help="task plan made for this many")
    parser.add_argument("--kernels", nargs="+", choices=sorted(KERNELS), default=sorted(KERNELS),
                        help="kernel paths to time (a path the CPU lacks is left out)")
    args = parser.parse_args()
    cases = shapes(args.tokens, args.seqs)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(tmp)
        for kernel in args.kernels:
            ran, peak, times = run_driver(exe, args.repeats, args.threads, kernel, cases)
            if ran == kernel:  # else the CPU lacks this path (it ran a lower one)
                results[kernel] = times
    if not results:
        print("no bf16 kernel path for this CPU (AVX512_BF16 or AMX)")
        return 0
    rows = []
    for i, (name, batch, m, n, k, trans_b, packed) in enumerate(cases):
        flops = 2.0 * batch * m * n * k
        bound = 2**-7 + 2**-15 + k * 2**-23
        row = {"gemm": name, "batch": batch, "m": m, "n": n, "k": k,
               "B": ("packed " if packed else "") + ("trans" if trans_b else "row")}
        for kernel, times in results.items():
            sec, err = times[i]
            row[f"{kernel} ms"] = sec * 1e3
            row[f"{kernel} GF/s"] = flops / sec / 1e9
            row[f"{kernel} err/bound"] = f"{err / bound:.2f}"
        if len(results) == 2:
            row["amx speedup"] = f"{results['avx512_bf16'][i][0] / results['amx'][i][0]:.2f}x"
        rows.append(row)
    print_table(f"bf16 GEMM kernel paths, one thread's CPU time (min of {args.repeats}); "
                f"measured VDPBF16PS peak {peak / 1e9:.0f} GF/s per core", rows)
    for kernel, times in results.items():
        print(f"sum of times, {kernel}: {sum(t for t, _ in times) * 1e3:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
