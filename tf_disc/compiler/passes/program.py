"""A function with control flow as a Program: straight-line Segments (each
an isolated Func the standard pipeline compiles, fusion included) between
Loops, whose cond and body are Programs themselves, and Branches (an `if`
or `case`), whose every branch is a Program.

  func @f(%x) { %a = ...; %r = while(%a, ...) (cond, body); %y = ...(%r) }
  -> Program(args [%x], steps [Segment(%x -> %a), Loop(%r), Segment(%x, %r -> %y)])

A segment takes the program's arguments, the results of every loop and
branch before it (so that each dim its ops name is read from one of its
inputs) and the values it reads from earlier steps; it returns what later
steps or the program return.  Constants and host dims tensors an earlier
segment defines are recomputed (copied) instead of passed.  A loop variable the
body returns unchanged is an invariant: the body does not return it and
the loop reuses the caller's buffer (weights are never copied per step).
A TensorList the body only sets one row of (`list_set` of the variable,
nothing else reading it) is updated in place: the body returns that row's
index and item instead, and the loop writes the row into its own copy of
the list (runtime/cpu/prelude/disc_loop.h).
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Callable, Union

from ..ir.control import loop_funcs
from ..ir.core import Func, Namer, Op, Value
from ..ir.opset import spec

_RECOMPUTED = ("constant", "dims_tensor")


@dataclasses.dataclass
class Segment:
    func: Func
    inputs: list[Value]    # the caller's values passed as func.args, in order
    outputs: list[Value]   # the caller's values func.rets define, in order


# How a loop carries each variable (disc_loop.h's DISC_LOOP_* values).
CARRIED, INVARIANT, IN_PLACE = 0, 1, 2


@dataclasses.dataclass
class Loop:
    op: Op                 # the `while` op (operands and results: the caller's)
    cond: "Program"
    # returns the CARRIED variables in order, then (index, item) per IN_PLACE one
    body: "Program"
    modes: list[int]       # per loop variable


@dataclasses.dataclass
class Branch:
    op: Op                 # the `if` / `case` op (operands and results: the caller's)
    branches: list["Program"]  # in op.funcs' order


@dataclasses.dataclass
class Program:
    name: str
    args: list[Value]
    steps: list[Union[Segment, Loop, Branch]]
    rets: list[Value]

    def segments(self) -> list[Segment]:
        """Every segment, nested programs' included (program order)."""
        out: list[Segment] = []
        for s in self.steps:
            if isinstance(s, Segment):
                out.append(s)
            elif isinstance(s, Loop):
                out += s.cond.segments() + s.body.segments()
            else:
                for p in s.branches:
                    out += p.segments()
        return out


def has_control_flow(func: Func) -> bool:
    return any(spec(op.name).kind == "control" for op in func.ops)


def split_program(func: Func) -> Program:
    """func (verified IR, control flow ops at top level) as a Program."""
    chunks: list[list[Op]] = [[]]
    controls: list[Op] = []
    for op in func.ops:
        if spec(op.name).kind == "control":
            controls.append(op)
            chunks.append([])
        else:
            chunks[-1].append(op)
    # values read after each chunk: by later ops, control flow and the returns
    later_reads: list[set[Value]] = []
    reads: set[Value] = set(func.rets)
    for i in range(len(chunks) - 1, -1, -1):
        later_reads.append(set(reads))
        for op in chunks[i]:
            reads.update(_reads(op))
        if i > 0:
            reads.update(controls[i - 1].operands)
    later_reads.reverse()
    defs: dict[Value, Op] = {op.results[0]: op for op in func.ops
                             if op.name in _RECOMPUTED}
    # values that must be buffers: what control flow and the caller receive
    buffers = set(func.rets).union(*(op.operands for op in controls))
    steps: list[Union[Segment, Loop, Branch]] = []
    control_results: list[Value] = []
    for i, chunk in enumerate(chunks):
        seg = _segment(f"{func.name}.s{i}", chunk, func.args + control_results, later_reads[i],
                       defs, buffers, func.rets)
        if seg is not None:
            steps.append(seg)
        if i < len(controls):
            op = controls[i]
            steps.append(_loop(op) if op.name == "while" else
                         Branch(op, [split_program(f) for f in op.funcs]))
            control_results += op.results
    return Program(func.name, list(func.args), steps, list(func.rets))


def _reads(op: Op) -> list[Value]:
    vals = list(op.operands)
    if op.region is not None:
        for inner in op.region.ops:
            vals += inner.operands
    return vals


def _segment(name: str, chunk: list[Op], always: list[Value], later: set[Value],
             defs: dict[Value, Op], buffers: set[Value], rets: list[Value]) -> Segment | None:
    if not chunk:
        return None
    defined = {r for op in chunk for r in op.results}
    outputs = [r for op in chunk for r in op.results
               if r in later and (op.name not in _RECOMPUTED or r in buffers)]
    # the program's returns first, in order: a loop body that is one
    # segment then returns its values as they are (codegen/cpu/program.py)
    rank = {v: i for i, v in reversed(list(enumerate(rets)))}
    outputs.sort(key=lambda v: rank.get(v, len(rets)))
    ops: list[Op] = []
    copied: set[Value] = set()
    inputs: list[Value] = list(dict.fromkeys(always))
    for op in chunk:
        for v in _reads(op):
            if v in defined or v in copied or v in inputs:
                continue
            if v in defs:  # recompute a constant instead of passing it
                ops.append(defs[v])
                copied.add(v)
            else:
                inputs.append(v)
        ops.append(op)
    func = Func(name, inputs, ops, outputs, {})
    return Segment(func, list(inputs), list(outputs))


def _in_place(body: Func) -> dict[int, Op]:
    """Loop variable -> the list_set the body returns for it, where nothing
    else in the body reads the variable or the set list."""
    producer = {r: o for o in body.ops for r in o.results}
    uses = collections.Counter(v for o in body.ops for v in o.operands)
    uses.update(body.rets)
    out = {}
    for k, (a, r) in enumerate(zip(body.args, body.rets)):
        o = producer.get(r)
        if o is not None and o.name == "list_set" and o.operands[0] is a and \
                uses[a] == 1 and uses[r] == 1:
            out[k] = o
    return out


def _loop(op: Op) -> Loop:
    cond, body = loop_funcs(op)
    sets = _in_place(body)
    modes = [IN_PLACE if k in sets else INVARIANT if r is a else CARRIED
             for k, (r, a) in enumerate(zip(body.rets, body.args))]
    rets = [r for r, m in zip(body.rets, modes) if m == CARRIED]
    ops = [o for o in body.ops if o not in sets.values()]
    namer = Namer.for_func(body)
    for k in sorted(sets):
        for v in sets[k].operands[1:]:  # the row's index and item
            if v in body.args:  # computed, so the body's one segment returns it
                copy = Value(namer(), v.type)
                ops.append(Op("copy", [v], [copy]))
                v = copy
            rets.append(v)
    body = dataclasses.replace(body, ops=ops, rets=rets)
    return Loop(op, split_program(cond), split_program(body), modes)


def map_segments(program: Program, fn: Callable[[Func], Func]) -> Program:
    """program with fn (a pipeline) applied to every segment's function."""
    steps: list[Union[Segment, Loop, Branch]] = []
    for s in program.steps:
        if isinstance(s, Segment):
            steps.append(dataclasses.replace(s, func=fn(s.func)))
        elif isinstance(s, Loop):
            steps.append(dataclasses.replace(s, cond=map_segments(s.cond, fn),
                                             body=map_segments(s.body, fn)))
        else:
            steps.append(dataclasses.replace(s, branches=[map_segments(p, fn)
                                                          for p in s.branches]))
    return dataclasses.replace(program, steps=steps)
