"""Assembles the translation unit: prelude, constants, kernels, host (the
host at HOST_OPT, the kernels at the command line's -O3).

A speculated function (passes/speculate.py) is emitted twice, each version
in its own namespace, behind a disc_entry that checks the guard's input
dim equalities and calls the specialized or the general version; a kernel
both versions have is compiled once (the general version aliases the
speculated version's).

generate_units splits the same code into several translation units that the
build compiles in parallel and links (GCC's optimizer is most of a cold
compile and runs on one core per unit): unit 0 holds the constants, the host
code and the kernels' argument structs, the kernels are spread over all
units by source size."""
from __future__ import annotations

import dataclasses
import functools

from ...ir.core import Func
from ..abi import abi_guard
from ..gemm import GEMM_HEADER, needs_helper
from ..cstr import c_comment
from .host import ENTRY_HEAD, render_host
from .kernel import build_kernel
from ..kernel_code import KernelCode
from .stitch import build_stitch
from .prelude import PRELUDE_INCLUDE

_SPECULATED = ("disc_speculated", "disc_general")
# Weighted source characters (kernels, plus the host code at HOST_WEIGHT) per
# extra unit: each unit parses the prelude again (~0.2 s) and the library
# needs a link step, which smaller splits don't repay.
MIN_UNIT_CHARS = 20000
# Host code (at HOST_OPT) compiles in about 0.25x the CPU time per character
# of kernel code (-O3).
HOST_WEIGHT = 0.25
# GCC optimization level of the host code (disc_entry and each version's
# entry): one long straight-line function of shape arithmetic and calls, whose
# -O3 build is a quarter of a cold compile and buys nothing measurable per call;
# kernels stay -O3.  Clang ignores GCC's pragma, so the guard keeps it quiet.
HOST_OPT = "O1"
_GCC_ONLY = "#if defined(__GNUC__) && !defined(__clang__)\n{}\n#endif"


def host_block(host: str) -> str:
    """host code compiled at HOST_OPT (the rest of the unit keeps -O3)."""
    begin = f'#pragma GCC push_options\n#pragma GCC optimize("{HOST_OPT}")'
    return "\n".join([_GCC_ONLY.format(begin), host, _GCC_ONLY.format("#pragma GCC pop_options")])


@dataclasses.dataclass(frozen=True)
class NamedKernel:
    """A kernel to emit under its name (kernel_code.py)."""
    name: str
    code: KernelCode

    @functools.cached_property
    def text(self) -> str:
        """Rendered once: the library, its split into units and their sizes
        all read it."""
        return self.code.text(self.name)


def dedupe_kernels(kernels: list[NamedKernel], seen: dict | None = None,
                   ns: str = "") -> tuple[list[NamedKernel], list[str]]:
    """(kernels to emit, alias lines): a kernel whose code equals an earlier
    one's but for its name (the same layer repeated: every layer of a BERT)
    becomes aliases of that one's argument struct and functions instead of
    another copy to compile.  seen (shape -> (namespace, name), updated)
    carries the kernels of the versions emitted before this one, in
    namespace `ns`: a speculated function's general version reuses the
    speculated version's copies of the kernels both have (kernels reference
    nothing outside themselves but the prelude)."""
    first: dict[str, tuple[str, str]] = {} if seen is None else seen
    emitted, aliases = [], []
    for k in kernels:
        shape = k.code.shape()
        if shape not in first:
            first[shape] = (ns, k.name)
            emitted.append(k)
            continue
        where, was = first[shape]
        was = f"{where}::{was}" if where != ns else was
        aliases.append(f"using {k.name}_args = {was}_args;")
        aliases += [f"constexpr DiscParallelFn {k.name}{s} = {was}{s};"
                    for s in k.code.suffixes()]
    return emitted, aliases


def render_version(func: Func, entry_name: str | None, seen: dict,
                   ns: str) -> tuple[str, list[NamedKernel], list[str], str]:
    """(constant arrays, kernels, kernel aliases, host source) of one version
    (in namespace ns; seen: dedupe_kernels')."""
    consts = {op.result: op for op in func.ops if op.name == "constant"}
    kernels = {op: build_kernel(op, consts) for op in func.ops if op.name == "fusion"}
    kernels.update({op: build_stitch(op, consts, i) for i, op in
                    enumerate(o for o in func.ops if o.name == "stitch")})
    const_src, host_src = render_host(func, kernels, entry_name)
    emitted, aliases = dedupe_kernels([NamedKernel(k.name, k.code) for k in kernels.values()],
                                      seen, ns)
    return const_src, emitted, aliases, host_src


def _guard(func: Func) -> str:
    """C++ condition: the inputs have the ranks, and the dims the equalities,
    the speculated version assumes."""
    args = func.general.args      # the input dims as given
    where = {d: f"inputs[{i}].dims[{j}]" for i, a in reversed(list(enumerate(args)))
             for j, d in reversed(list(enumerate(a.shape)))}
    conds = [f"num_inputs == {len(args)}"]
    conds += [f"inputs[{i}].rank == {a.type.rank}" for i, a in enumerate(args)]
    conds += [f"{where[d]} == {where.get(rep, f'int64_t({rep})')}"
              for d, rep in func.attrs["speculated"]]
    return " &&\n      ".join(conds)


def _head(func: Func) -> list[str]:
    return [f"// Generated by blade_disc_tf.compiler for {c_comment(func.name)}",
            PRELUDE_INCLUDE, abi_guard(), "#include <cstdlib>", ""]


# What the library tells the loader (runtime/disc_abi.h): the ABI it was
# generated for and the device its code runs on.
LIBRARY_EXPORTS = ("extern \"C\" __attribute__((visibility(\"default\"))) int32_t "
            "disc_abi_version(void) { return DISC_ABI_VERSION; }\n"
            "extern \"C\" __attribute__((visibility(\"default\"))) int32_t "
            "disc_device(void) { return DISC_DEVICE_CPU; }\n")


def _entry(host: str) -> list[str]:
    """The exports, then the host code of an unspeculated function."""
    return [LIBRARY_EXPORTS, host_block(host)]


def _dispatch(func: Func) -> list[str]:
    return [LIBRARY_EXPORTS, host_block("\n".join([
        ENTRY_HEAD,
        f"  if ({_guard(func)})",
        "    return disc_speculated::entry(rt, inputs, num_inputs);",
        "  return disc_general::entry(rt, inputs, num_inputs);", "}"])), ""]


def _versions(func: Func) -> list[Func]:
    return [func] if func.general is None else [func, func.general]


def _helper(func: Func) -> list[str]:
    return [GEMM_HEADER] if any(needs_helper(f.ops) for f in _versions(func)) else []


def _render_versions(func: Func) -> list[tuple[str, list[NamedKernel], list[str], str]]:
    seen: dict = {}
    if func.general is None:
        return [render_version(func, None, seen, "")]
    return [render_version(f, "entry", seen, ns) for f, ns in zip(_versions(func), _SPECULATED)]


def _one_unit(func: Func, versions: list) -> str:
    head = _head(func)
    if func.general is None:
        const_src, kernels, aliases, host = versions[0]
        return "\n".join(head + ["namespace {", const_src, *[k.text for k in kernels],
                                 *aliases, "}  // namespace", ""]
                         + _helper(func) + _entry(host))
    parts = head + _helper(func)
    for ns, (const_src, kernels, aliases, host) in zip(_SPECULATED, versions):
        parts += [f"namespace {ns} {{", const_src, *[k.text for k in kernels], *aliases,
                  host_block(host), f"}}  // namespace {ns}", ""]
    return "\n".join(parts + _dispatch(func))


def generate_source(func: Func) -> str:
    """C++ source implementing disc_entry for `func` (after the pipeline)."""
    return _one_unit(func, _render_versions(func))


def _assign(sizes: list[int], units: int, first: int) -> list[int]:
    """Unit of each item: largest first onto the least loaded unit (unit 0
    starts with `first`, the host code's size)."""
    load = [first] + [0] * (units - 1)
    where = [0] * len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        u = min(range(units), key=lambda u: load[u])
        where[i] = u
        load[u] += sizes[i]
    return where


def generate_units(func: Func, units: int) -> list[str]:
    """generate_source's code as at most `units` translation units to be
    linked into one library; unit 0 defines disc_entry.  One unit is
    generate_source itself."""
    return generate_library(func, units)[1]


def generate_library(func: Func, units: int) -> tuple[str, list[str]]:
    """(generate_source's text, generate_units' units), rendered once.  The
    first names the library (its disk-cache key): the split follows how busy
    the CPUs are at compile time, the library must not."""
    spec = func.general is not None
    names = _SPECULATED if spec else ("disc_kernels",)
    versions = _render_versions(func)
    single = _one_unit(func, versions)
    items = [(v, k, k.text) for v, (_, kernels, _, _) in enumerate(versions) for k in kernels]
    host_size = int(HOST_WEIGHT * sum(len(c) + len(h) for c, _, _, h in versions))
    weight = host_size + sum(len(text) for _, _, text in items)
    units = max(1, min(units, len(items) + 1, weight // MIN_UNIT_CHARS))
    if units == 1:
        return single, [single]
    where = _assign([len(text) for _, _, text in items], units, host_size)
    out = []
    for u in sorted(set(where) | {0}):
        parts = _head(func) + (_helper(func) if u == 0 else [])
        for v, (ns, (const_src, _, aliases, host)) in enumerate(zip(names, versions)):
            mine = [text for (kv, _, text), ku in zip(items, where) if kv == v and ku == u]
            if u == 0:
                # unit 0 declares the kernels other units define
                others = [k for (kv, k, _), ku in zip(items, where) if kv == v and ku != 0]
                scope = [const_src,
                         *[k.code.struct(k.name) + "\n" + "\n".join(k.code.declarations(k.name))
                           + "\n" for k in others],
                         *mine, *aliases] + ([host_block(host)] if spec else [])
            else:
                scope = mine
            parts += [f"namespace {ns} {{", *scope, f"}}  // namespace {ns}", ""]
        if u == 0:
            parts += _dispatch(func) if spec else ["using namespace disc_kernels;", "",
                                                   *_entry(versions[0][3])]
        out.append("\n".join(parts))
    return single, out
