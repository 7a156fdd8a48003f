"""C++ for a Program (passes/program.py): every segment rendered as one
version (codegen/cpu/source.py) in its own namespace, with an entry of
disc_entry's signature; each program that is more than one segment gets a
function that runs its steps over a table of DiscBuffers (runtime headers
cpu/prelude/disc_loop.h: disc_call, disc_while, disc_copy_output,
disc_free_steps; cpu/prelude/disc_branch.h: disc_branch) and frees the
steps' scratch once its outputs are copied out; the library's disc_entry is
the top program's.

A program that is exactly one segment (a loop body without inner loops,
returning its values in order) is called directly: its outputs are the
loop's next buffers, nothing is copied."""
from __future__ import annotations

import dataclasses

from ...ir.core import Value
from ...passes.program import Branch, Loop, Program, Segment
from ..abi import abi_guard
from ..c_types import c_type
from ..cstr import c_comment, c_string
from ..gemm import GEMM_HEADER, needs_helper
from .host import ENTRY_HEAD
from .prelude import PRELUDE_INCLUDE
# source.py's per-version rendering, shared with straight-line functions.
from .source import LIBRARY_EXPORTS, MIN_UNIT_CHARS, host_block, render_version

LOOP_INCLUDE = '#include "cpu/prelude/disc_loop.h"'
BRANCH_INCLUDE = '#include "cpu/prelude/disc_branch.h"'
_ENTRY = "entry"
_PROGRAMS = "disc_programs"


@dataclasses.dataclass
class _Emitter:
    """The program functions in definition order and each segment's
    namespace and entry; segments are rendered afterwards (_render), in one
    translation unit or several."""
    functions: list[str] = dataclasses.field(default_factory=list)
    segments: list[Segment] = dataclasses.field(default_factory=list)
    callables: dict[int, str] = dataclasses.field(default_factory=dict)
    count: int = 0  # program functions named so far

    def segment(self, seg: Segment) -> str:
        """The segment's entry function (named once)."""
        if id(seg) not in self.callables:
            self.callables[id(seg)] = f"{_ns(len(self.segments))}::{_ENTRY}"
            self.segments.append(seg)
        return self.callables[id(seg)]

    def program(self, prog: Program) -> str:
        """The function running prog (a segment's entry when it is one)."""
        direct = _direct_segment(prog)
        if direct is not None:
            return self.segment(direct)
        name = f"program_{self.count}"
        self.count += 1
        body = self._steps(prog)  # defines the programs prog calls first
        self.functions.append("\n".join(
            [f"int32_t {name}(const DiscRuntime* rt, const DiscBuffer* inputs, "
             "int32_t num_inputs) {"] + body + ["}", ""]))
        return f"{_PROGRAMS}::{name}"

    def _steps(self, prog: Program) -> list[str]:
        slots: dict[Value, int] = {}

        def slot(v: Value) -> int:
            return slots.setdefault(v, len(slots))

        for a in prog.args:
            slot(a)
        lines: list[str] = []
        for step in prog.steps:
            if isinstance(step, Segment):
                lines += self._call(step, slot)
            elif isinstance(step, Loop):
                lines += self._loop(step, slot)
            else:
                lines += self._branch(step, slot)
        for k, r in enumerate(prog.rets):
            lines.append(f"  if (disc_copy_output(rt, {k}, v[{slot(r)}], "
                         f"{_esize(r)})) return 1;")
        n_args = len(prog.args)
        if len(slots) > n_args:  # the steps' results: copied out, so freed
            lines.append(f"  disc_free_steps(rt, v + {n_args}, {len(slots) - n_args}, "
                         "inputs, num_inputs);")
        head = [f"  if (num_inputs != {len(prog.args)}) return disc_fail(rt, "
                "DISC_ERROR_INTERNAL, \"expected {0} inputs\", "
                f"disc_int_text({len(prog.args)}).s, \"\");",
                f"  DiscBuffer v[{max(len(slots), 1)}];"]
        head += [f"  v[{slot(a)}] = inputs[{i}];" for i, a in enumerate(prog.args)]
        return head + lines + ["  return 0;"]

    def _call(self, seg: Segment, slot) -> list[str]:
        fn = self.segment(seg)
        ins = ", ".join(f"v[{slot(x)}]" for x in seg.inputs) or "DiscBuffer{}"
        n_out = max(len(seg.outputs), 1)
        sizes = ", ".join(_esize(r) for r in seg.outputs) or "0"
        lines = ["  {", f"    const DiscBuffer in[{max(len(seg.inputs), 1)}] = {{{ins}}};",
                 f"    DiscBuffer out[{n_out}];",
                 f"    static const int64_t es[{n_out}] = {{{sizes}}};",
                 f"    if (disc_call(rt, &{fn}, in, {len(seg.inputs)}, out, "
                 f"{len(seg.outputs)}, es)) return 1;"]
        lines += [f"    v[{slot(r)}] = out[{j}];" for j, r in enumerate(seg.outputs)]
        return lines + ["  }"]

    def _loop(self, loop: Loop, slot) -> list[str]:
        cond, body = self.program(loop.cond), self.program(loop.body)
        xs, n = loop.op.operands, len(loop.op.operands)
        modes = ", ".join(str(m) for m in loop.modes)
        var, shape = loop.op.attrs.get("unset_list", [-1, ""])
        unset = f"{var}, {c_string(shape)}"
        lines = ["  {  // while " + c_comment(str(loop.op.attrs.get("node", ""))),
                 f"    DiscBuffer lv[{n}] = {{{', '.join(f'v[{slot(x)}]' for x in xs)}}};",
                 f"    static const uint8_t modes[{n}] = {{{modes}}};",
                 f"    static const int64_t es[{n}] = {{{', '.join(_esize(x) for x in xs)}}};",
                 f"    if (disc_while(rt, &{cond}, &{body}, lv, {n}, modes, es, {unset})) "
                 "return 1;"]
        lines += [f"    v[{slot(r)}] = lv[{k}];" for k, r in enumerate(loop.op.results)]
        return lines + ["  }"]

    def _branch(self, step: Branch, slot) -> list[str]:
        fns = ", ".join(f"&{self.program(p)}" for p in step.branches)
        selector, args = step.op.operands[0], step.op.operands[1:]
        results = step.op.results
        ins = ", ".join(f"v[{slot(x)}]" for x in args) or "DiscBuffer{}"
        n_out = max(len(results), 1)
        sizes = ", ".join(_esize(r) for r in results) or "0"
        case = "true" if step.op.name == "case" else "false"
        lines = ["  {  // " + step.op.name + " " + c_comment(str(step.op.attrs.get("node", ""))),
                 f"    static const DiscEntryFn fns[{len(step.branches)}] = {{{fns}}};",
                 f"    const DiscBuffer in[{max(len(args), 1)}] = {{{ins}}};",
                 f"    DiscBuffer out[{n_out}];",
                 f"    static const int64_t es[{n_out}] = {{{sizes}}};",
                 f"    if (disc_branch(rt, v[{slot(selector)}], {case}, fns, "
                 f"{len(step.branches)}, in, {len(args)}, out, {len(results)}, es)) return 1;"]
        lines += [f"    v[{slot(r)}] = out[{j}];" for j, r in enumerate(results)]
        return lines + ["  }"]


def _esize(v: Value) -> str:
    return f"int64_t(sizeof({c_type(v.dtype)}))"


def _ns(i: int) -> str:
    return f"disc_s{i}"


def _direct_segment(prog: Program) -> Segment | None:
    if len(prog.steps) != 1 or not isinstance(prog.steps[0], Segment):
        return None
    seg = prog.steps[0]
    if seg.inputs != prog.args or seg.outputs != prog.rets:
        return None
    return seg


def _render(segments: list[tuple[int, Segment]]) -> list[str]:
    """The namespaces of segments (index, segment), rendered together: a
    kernel one of them repeats is emitted once (source.dedupe_kernels)."""
    seen: dict = {}
    out = []
    for i, seg in segments:
        const_src, kernels, aliases, host = render_version(seg.func, _ENTRY, seen, _ns(i))
        out.append("\n".join([f"namespace {_ns(i)} {{  // {c_comment(seg.func.name)}",
                              const_src, *[k.text for k in kernels], *aliases,
                              host_block(host), f"}}  // namespace {_ns(i)}", ""]))
    return out


def _head(prog: Program, segments: list[Segment]) -> list[str]:
    gemm = any(needs_helper(s.func.ops) for s in segments)
    return [f"// Generated by blade_disc_tf.compiler for {c_comment(prog.name)}",
            PRELUDE_INCLUDE, LOOP_INCLUDE, BRANCH_INCLUDE, abi_guard(), "#include <cstdlib>",
            ""] + ([GEMM_HEADER] if gemm else [])


def _programs(em: _Emitter, top: str) -> list[str]:
    return [host_block("\n".join([f"namespace {_PROGRAMS} {{", *em.functions,
                                   f"}}  // namespace {_PROGRAMS}"])),
            LIBRARY_EXPORTS,
            host_block("\n".join([ENTRY_HEAD, f"  return {top}(rt, inputs, num_inputs);",
                                   "}", ""]))]


def _groups(em: _Emitter, units: int) -> list[list[int]]:
    """Segments per unit: largest first onto the least loaded unit, by the
    size of their rendering alone; unit 0 also holds the program functions."""
    sizes = [len(text) for i in range(len(em.segments))
             for text in _render([(i, em.segments[i])])]
    load = [sum(len(f) for f in em.functions)] + [0] * (units - 1)
    groups: list[list[int]] = [[] for _ in range(units)]
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        u = min(range(units), key=lambda u: load[u])
        groups[u].append(i)
        load[u] += sizes[i]
    return [sorted(g) for g in groups if g or g is groups[0]]


def generate_program(prog: Program, units: int = 1) -> tuple[str, list[str]]:
    """(one translation unit implementing disc_entry for prog, the same
    program as at most `units` units to build in parallel and link) after
    the pipeline ran on every segment.  The first names the library in the
    disk cache; in the split, kernels are shared only within a unit."""
    em = _Emitter()
    top = em.program(prog)
    everything = list(enumerate(em.segments))
    single = "\n".join(_head(prog, em.segments) + _render(everything) + _programs(em, top))
    units = max(1, min(units, len(em.segments), len(single) // MIN_UNIT_CHARS))
    if units == 1:
        return single, [single]
    out = []
    for u, group in enumerate(_groups(em, units)):
        mine = [em.segments[i] for i in group]
        parts = _head(prog, mine) + _render([(i, em.segments[i]) for i in group])
        if u == 0:  # the program functions call every segment's entry
            parts += [f"namespace {_ns(i)} {{ int32_t {_ENTRY}(const DiscRuntime* rt, "
                      "const DiscBuffer* inputs, int32_t num_inputs); }"
                      for i in range(len(em.segments)) if i not in group]
            parts += _programs(em, top)
        out.append("\n".join(parts))
    return single, out
