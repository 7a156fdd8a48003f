"""Ahead-of-time compilation of the DiscLaunch clusters of a converted graph:
works out each launch's cache key (input dtypes and ranks, plus values of
const inputs when they are graph constants), compiles it through the same
service the kernel's callback uses, and embeds the library in the node."""
from __future__ import annotations

import ctypes
import dataclasses
import time
from typing import Callable, Dict, List, Optional, Sequence

from . import _embed
from ._offline_cluster import DISC_LAUNCH


@dataclasses.dataclass
class ClusterReport:
    """What happened to one DiscLaunch node."""

    node: str
    function: str
    ops: int
    key: Optional[str] = None
    compiled: bool = False
    seconds: float = 0.0
    size: int = 0
    reason: str = ""   # why it is left to run-time compile / fallback
    target_isas: List[str] = dataclasses.field(default_factory=list)  # tiers embedded


def _cluster_function_bytes(library_path: str, name: str, fallback) -> bytes:
    """The cluster body as DiscOptimizer built it in this process (what the
    kernel would compile), else the library's copy."""
    lib = ctypes.CDLL(library_path)
    fn = lib.DiscGetClusterFunction
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int64]
    fn.restype = ctypes.c_int64
    size = fn(name.encode(), None, 0)
    if size < 0:
        return fallback.SerializeToString(deterministic=True)
    buf = ctypes.create_string_buffer(size)
    fn(name.encode(), buf, size)
    return buf.raw[:size]


def fast_math_changes(launch) -> bool:
    """Whether fast_math=bf16 may change a launch's cluster, so that DiscLaunch
    keys it with the option: the rewrite's fast_math_changes attr (a float op
    of compiler/registry.py FAST_MATH_OPS in the cluster); true when absent, as the
    op's default."""
    return launch.attr["fast_math_changes"].b if "fast_math_changes" in launch.attr else True


def launch_shapes(graph_def, input_map_fn: Callable[[], dict]) -> tuple:
    """({launch: input TensorShapes}, {launch: [(output shape, dtype)]}) for
    every top-level DiscLaunch whose input ranks are known.  A launch's
    outputs are inferred from its function body and fed back, until nothing
    changes (a few rounds: one per launch-to-launch hop)."""
    import tensorflow as tf
    from tensorflow.python.framework.function_def_to_graph import function_def_to_graph

    fdefs = {f.signature.name: f for f in graph_def.library.function}
    launches = [n for n in graph_def.node if n.op == DISC_LAUNCH]
    outputs: Dict[str, list] = {}
    inputs: Dict[str, list] = {}
    while True:
        graph = tf.Graph()
        with graph.as_default():
            input_map = dict(input_map_fn())
            for name, specs in outputs.items():
                for i, (shape, dtype) in enumerate(specs):
                    input_map[f"{name}:{i}"] = tf.compat.v1.placeholder(dtype, shape)
            tf.graph_util.import_graph_def(graph_def, input_map=input_map, name="")
        progress = False
        for node in launches:
            if node.name in outputs:
                continue
            shapes = [t.shape for t in graph.get_operation_by_name(node.name).inputs]
            if any(s.rank is None for s in shapes):
                continue
            body = function_def_to_graph(fdefs[node.attr["f"].func.name], input_shapes=shapes)
            inputs[node.name] = shapes
            outputs[node.name] = [(t.shape, t.dtype) for t in body.outputs]
            progress = True
        if not progress:
            return inputs, outputs


def _const_values(graph_def, node, arg: int) -> Optional[list]:
    """Flattened int values of launch input `arg` when it is a Const node."""
    import tensorflow as tf

    src = node.input[arg].split(":")[0]
    producer = next((n for n in graph_def.node if n.name == src), None)
    if producer is None or producer.op != "Const":
        return None
    return [int(v) for v in tf.make_ndarray(producer.attr["value"].tensor).flatten()]


def _request(graph_def, node, shapes) -> tuple:
    """(key, request inputs) exactly as DiscLaunch builds them, or raises
    LookupError naming why the key is unknown ahead of time."""
    dtypes = list(node.attr["Targs"].list.type)
    ranks = [s.rank for s in shapes]
    key = ",".join(str(r) for r in ranks)
    values: Dict[int, list] = {}
    for arg in node.attr["const_args"].list.i:
        vals = _const_values(graph_def, node, arg)
        if vals is None:
            raise LookupError(f"needs the value of input {arg}, unknown before run time")
        values[arg] = vals
        key += f"|{arg}=[{','.join(str(v) for v in vals)}]"
    inputs = [{"dtype": int(dt), "rank": int(r), "value": values.get(i)}
              for i, (dt, r) in enumerate(zip(dtypes, ranks))]
    return key, inputs


def default_target_isas() -> tuple:
    """The tiers a conversion embeds by default: AVX2 and AVX-512 (a model
    converted on one server generation serves compiled on the others), and
    this machine's own tier."""
    from blade_disc_tf.compiler.build import isa

    wanted = {"avx2", "avx512", isa.host_tier()}
    return tuple(t for t in isa.TIERS if t in wanted)


def _compile_tiers(node, rep: ClusterReport, inputs: list, fallback_fdef, compile_options,
                   library_path: str, target_isas: Sequence[str]) -> None:
    """Compiles one launch for each tier and embeds one executable per
    distinct compiler command line (the op library picks the best one the
    serving CPU runs: embedded.cc)."""
    from blade_disc_tf.compiler import service

    start = time.monotonic()
    fdef = _cluster_function_bytes(library_path, rep.function, fallback_fdef)
    seen = set()
    for tier in target_isas:
        request = {"function": rep.function, "key": rep.key, "inputs": inputs,
                   "target_isa": tier}
        flags = service.target_flags(request, compile_options)
        if flags in seen:  # tiers whose generated code is the same
            continue
        seen.add(flags)
        reply = service.compile_request(request, fdef, compile_options)
        if not reply.get("ok"):
            rep.reason = f"compile failed: {reply.get('error')} (target {tier})"
            continue
        with open(reply["path"], "rb") as f:
            library = f.read()
        # Asked only now: the compiler is known to work.
        features = _embed.required_cpu_features(compile_options.cxx, flags)
        node.attr["executables"].list.s.append(_embed.encode_entry(rep.key, library, features))
        rep.target_isas.append(tier)
        rep.size += len(library)
    rep.compiled = bool(rep.target_isas)
    rep.seconds = time.monotonic() - start


def compile_launches(graph_def, input_map_fn: Callable[[], dict], compile_options,
                     library_path: str, progress: Callable[[str], None],
                     target_isas: Sequence[str] = ()) -> List[ClusterReport]:
    """Compiles and embeds every top-level launch of `graph_def` (in place),
    once per ISA tier of `target_isas` (default_target_isas() when empty)."""
    from blade_disc_tf.compiler.build import isa

    target_isas = tuple(isa.parse_tier(t) for t in target_isas) or default_target_isas()
    fdefs = {f.signature.name: f for f in graph_def.library.function}
    shapes, outputs = launch_shapes(graph_def, input_map_fn)
    reports = []
    for node in graph_def.node:
        if node.op != DISC_LAUNCH:
            continue
        fname = node.attr["f"].func.name
        rep = ClusterReport(node.name, fname, len(fdefs[fname].node_def))
        reports.append(rep)
        if node.name in outputs:  # lets TF's shape inference see through the launch
            node.attr["output_shapes"].list.shape.extend(
                shape.as_proto() for shape, _ in outputs[node.name])
        if node.name not in shapes:
            rep.reason = "input rank unknown before run time"
        else:
            try:
                rep.key, inputs = _request(graph_def, node, shapes[node.name])
                if compile_options.fast_math and fast_math_changes(node):
                    rep.key += f"|fast_math={compile_options.fast_math}"  # as DiscLaunch's
            except LookupError as e:
                rep.reason = str(e)
        if rep.key is not None:
            _compile_tiers(node, rep, inputs, fdefs[fname], compile_options, library_path,
                           target_isas)
        progress(f"  cluster {node.name} ({rep.ops} ops, key {rep.key or '-'}): " +
                 (f"compiled for {', '.join(rep.target_isas)} in {rep.seconds:.2f}s, "
                  f"{rep.size} bytes" if rep.compiled
                  else f"left to run time ({rep.reason})"))
    for func in graph_def.library.function:  # e.g. a _noinline function
        for node in func.node_def:
            if node.op == DISC_LAUNCH:
                fname = node.attr["f"].func.name
                reports.append(ClusterReport(
                    f"{func.signature.name}/{node.name}", fname, len(fdefs[fname].node_def),
                    reason="inside a called function body, compiled at run time"))
                progress(f"  cluster {reports[-1].node}: left to run time ({reports[-1].reason})")
    return reports
