"""The pass pipeline: one named list, run in order, optionally dumped
(ir_<NN>_<pass>.mlir) after every step.  standard_passes is the list every
target starts from, parameterized by what the target finds cheap to
recompute (target/base.py Target.passes).  The input and the result are always
verified; every step only when dumping or asked (verify_each): the checks
after each of the ~12 passes were a third of the pipeline's Python time, all
of it holding the GIL on the compile thread."""
from __future__ import annotations

import dataclasses
import logging
import functools
import os
from typing import Callable

from ..ir.core import Func
from ..ir.opset import spec
from ..ir.printer import print_func
from ..ir.verifier import VerifyError, verify
from .buffers import assign_buffers
from .canonicalize import canonicalize
from .conv_epilogue import fuse_conv_epilogues
from .cse import cse
from .dce import dce
from .fold_transpose import fold_transposes
from .fusion import fuse
from .gemm_epilogue import fuse_gemm_epilogues
from .list_sets import expand_list_sets
from .merge_gemm import merge_gemms
from .outputs import materialize_outputs
from .rematerialize import rematerialize_broadcasts
from .sink_broadcasts import sink_broadcasts
from .speculate import speculate
from .split_epilogues import split_epilogues
from .stitch import stitch

log = logging.getLogger("blade_disc_tf.compiler")

Pass = Callable[[Func], Func]


def standard_passes(cheap: Callable[[str], bool]) -> list[tuple[str, Pass]]:
    """The named pass list; cheap(op name): the target recomputes that
    elementwise op per element rather than keep its result in memory
    (sink_broadcasts, rematerialize_broadcasts)."""
    return [
        ("expand_list_sets", expand_list_sets),
        ("canonicalize", canonicalize),
        ("cse", cse),
        ("dce", dce),
        ("conv_epilogue", fuse_conv_epilogues),
        ("sink_broadcasts", functools.partial(sink_broadcasts, cheap=cheap)),
        ("canonicalize_2", canonicalize),
        ("fold_transposes", fold_transposes),
        ("dce_2", dce),
        ("rematerialize_broadcasts", functools.partial(rematerialize_broadcasts,
                                                       cheap_op=cheap)),
        ("materialize_outputs", materialize_outputs),
        ("stitch", stitch),
        ("fuse", fuse),
        ("split_epilogues", split_epilogues),
        ("gemm_epilogue", fuse_gemm_epilogues),
        ("merge_gemm", merge_gemms),
        ("assign_buffers", assign_buffers),
    ]


def run_pipeline(func: Func, passes: list[tuple[str, Pass]], dump_dir: str | None = None,
                 verify_each: bool = False, speculated: bool = True) -> Func:
    """passes on func and, with `speculated` where broadcasts are unresolved,
    on its speculated copy (passes/speculate.py), which is kept (carrying
    the general version) when it needs fewer kernels: else it would only
    double the C++ to compile.  Dumps of the copy go to dump_dir/speculated."""
    verify_each = verify_each or bool(dump_dir)
    general = _run(func, dump_dir, passes, verify_each)
    copy = speculate(func) if speculated else None
    if copy is None:
        return general
    sub = os.path.join(dump_dir, "speculated") if dump_dir else None
    fast = _run(copy[0], sub, passes, verify_each)
    if _launches(fast) >= _launches(general):
        log.debug("speculation: no kernel saved, general version only")
        return general
    return dataclasses.replace(fast, general=general)


def _launches(func: Func) -> int:
    """Kernels and library calls (each one a pass over memory); a GEMM
    epilogue kernel runs inside its GEMM (gemm_epilogue.py)."""
    return sum(spec(op.name).kind in ("fusion", "library") and "epilogue_of" not in op.attrs
               for op in func.ops)


def _run(func: Func, dump_dir: str | None, passes: list[tuple[str, Pass]],
         verify_each: bool) -> Func:
    """Run passes in order, verifying the input, the result and, with
    verify_each, every step (a VerifyError then names the pass); dump when
    dump_dir is set."""
    def dump(i: int, name: str, f: Func) -> None:
        if dump_dir:
            os.makedirs(dump_dir, exist_ok=True)
            with open(os.path.join(dump_dir, f"ir_{i:02d}_{name}.mlir"), "w") as fh:
                fh.write(print_func(f))

    verify(func)
    dump(0, "input", func)
    steps = passes
    for i, (name, p) in enumerate(steps, start=1):
        func = p(func)
        if verify_each or i == len(steps):
            _verify_after(name, func)
        log.debug("pass %s: %d top-level ops", name, len(func.ops))
        dump(i, name, func)
    return func


def _verify_after(name: str, func: Func) -> None:
    try:
        verify(func)
    except VerifyError as e:
        raise VerifyError(f"after pass {name}: {e}") from e
