"""How much of a model TensorFlow really ran inside DiscLaunch ops.

Ops outside clusters come from the post-optimization graphs TF records for
the first call (what it executed, not our counters); the ops inside each
DiscLaunch come from its cluster function, read from the graphs
DiscOptimizer dumps (`dump_dir/grappler/*_after.pbtxt`), because TF's run
metadata does not carry the cluster bodies."""
from __future__ import annotations

import collections
import glob
import os
import tempfile
from dataclasses import dataclass, field
from typing import Callable, Counter, Dict, Iterable, List

from google.protobuf import text_format
from tensorflow.core.framework import graph_pb2
from tensorflow.python.eager import context

# Bookkeeping, not compute: the share is over everything else.
NOT_COMPUTE = frozenset({"Const", "_EagerConst", "Identity", "IdentityN", "NoOp",
                         "_Arg", "_Retval", "_DeviceArg", "_DeviceRetval",
                         "ReadVariableOp", "VarHandleOp", "DiscLaunch"})


@dataclass
class Coverage:
    """Compute-op counts by op type, inside and outside DiscLaunch."""
    inside: Counter = field(default_factory=collections.Counter)
    outside: Counter = field(default_factory=collections.Counter)
    launches: List[str] = field(default_factory=list)  # cluster function names run

    @property
    def share(self) -> float:
        n_in, n_out = sum(self.inside.values()), sum(self.outside.values())
        return n_in / (n_in + n_out) if n_in + n_out else 0.0

    def summary(self) -> str:
        n_in, n_out = sum(self.inside.values()), sum(self.outside.values())
        left = ", ".join(f"{op} x{n}" for op, n in self.outside.most_common()) or "none"
        return (f"{n_in}/{n_in + n_out} compute ops in {len(self.launches)} DiscLaunch "
                f"cluster(s) ({100 * self.share:.1f}%); left in TF: {left}")


def executed_graphs(call: Callable[[], object]) -> List[graph_pb2.GraphDef]:
    """Post-optimization graphs of the functions `call` instantiates (so it
    must be their first call)."""
    ctx = context.context()
    ctx.enable_run_metadata()
    ctx.export_run_metadata()  # drops graphs TF recorded earlier (e.g. Keras' eager builds)
    try:
        call()
        metadata = ctx.export_run_metadata()
    finally:
        ctx.disable_run_metadata()
    return [fg.post_optimization_graph for fg in metadata.function_graphs]


def disc_launch_count(graphs: Iterable[graph_pb2.GraphDef]) -> int:
    return sum(node.op == "DiscLaunch" for g in graphs for node in g.node)


def _cluster_bodies(dump_dir: str) -> Dict[str, List[str]]:
    bodies: Dict[str, List[str]] = {}
    for path in glob.glob(os.path.join(dump_dir, "grappler", "*_after.pbtxt")):
        graph = graph_pb2.GraphDef()
        with open(path) as f:
            text_format.Parse(f.read(), graph)
        for fdef in graph.library.function:
            bodies[fdef.signature.name] = [n.op for n in fdef.node_def]
    return bodies


def measure(call: Callable[[], object]) -> Coverage:
    """Runs `call` (the first call of the tf.functions it uses, with
    blade_disc_tf enabled) and counts where its compute ops ran."""
    import blade_disc_tf as disc

    previous = disc.options().dump_dir
    with tempfile.TemporaryDirectory(prefix="disc_coverage_") as dump_dir:
        disc.set_options(dump_dir=dump_dir)
        try:
            graphs = executed_graphs(call)
        finally:
            disc.set_options(dump_dir=previous)
        bodies = _cluster_bodies(dump_dir)
    cov = Coverage()
    for graph in graphs:
        for node in graph.node:
            if node.op == "DiscLaunch":
                name = node.attr["f"].func.name
                cov.launches.append(name)
                cov.inside.update(op for op in bodies[name] if op not in NOT_COMPUTE)
            elif node.op not in NOT_COMPUTE:
                cov.outside[node.op] += 1
    return cov
