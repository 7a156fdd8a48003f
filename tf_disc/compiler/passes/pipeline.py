"""The pass pipeline: one named list, run in order, verified and optionally
dumped (ir_<NN>_<pass>.mlir) after every step."""
from __future__ import annotations

import dataclasses
import logging
import os
from typing import Callable

from ..ir.core import Func
from ..ir.opset import spec
from ..ir.printer import print_func
from ..ir.verifier import verify
from .buffers import assign_buffers
from .canonicalize import canonicalize
from .cse import cse
from .dce import dce
from .fold_transpose import fold_transposes
from .fusion import fuse
from .gemm_epilogue import fuse_gemm_epilogues
from .outputs import materialize_outputs
from .sink_broadcasts import sink_broadcasts
from .speculate import speculate
from .stitch import stitch

log = logging.getLogger("blade_disc_tf.compiler")

Pass = Callable[[Func], Func]

PIPELINE: list[tuple[str, Pass]] = [
    ("canonicalize", canonicalize),
    ("cse", cse),
    ("dce", dce),
    ("sink_broadcasts", sink_broadcasts),
    ("canonicalize_2", canonicalize),
    ("fold_transposes", fold_transposes),
    ("dce_2", dce),
    ("materialize_outputs", materialize_outputs),
    ("stitch", stitch),
    ("fuse", fuse),
    ("gemm_epilogue", fuse_gemm_epilogues),
    ("assign_buffers", assign_buffers),
]


def run_pipeline(func: Func, dump_dir: str | None = None,
                 passes: list[tuple[str, Pass]] | None = None) -> Func:
    """The pipeline on func and, where broadcasts are unresolved, on its
    speculated copy (passes/speculate.py), which is kept (carrying the
    general version) when it needs fewer kernels: else it would only double
    the C++ to compile.  Dumps of the copy go to dump_dir/speculated."""
    general = _run(func, dump_dir, passes)
    copy = speculate(verify(func)) if passes is None else None
    if copy is None:
        return general
    sub = os.path.join(dump_dir, "speculated") if dump_dir else None
    fast = _run(copy[0], sub, passes)
    if _launches(fast) >= _launches(general):
        log.debug("speculation: no kernel saved, general version only")
        return general
    return dataclasses.replace(fast, general=general)


def _launches(func: Func) -> int:
    """Kernels and library calls (each one a pass over memory); a GEMM
    epilogue kernel runs inside its GEMM (gemm_epilogue.py)."""
    return sum(spec(op.name).kind in ("fusion", "library") and "epilogue_of" not in op.attrs
               for op in func.ops)


def _run(func: Func, dump_dir: str | None, passes: list[tuple[str, Pass]] | None) -> Func:
    """Run passes in order; verify after each; dump when dump_dir is set."""
    def dump(i: int, name: str, f: Func) -> None:
        if dump_dir:
            os.makedirs(dump_dir, exist_ok=True)
            with open(os.path.join(dump_dir, f"ir_{i:02d}_{name}.mlir"), "w") as fh:
                fh.write(print_func(f))

    verify(func)
    dump(0, "input", func)
    for i, (name, p) in enumerate(passes or PIPELINE, start=1):
        func = verify(p(func))
        log.debug("pass %s: %d top-level ops", name, len(func.ops))
        dump(i, name, func)
    return func
