"""disc.explain(): which ops the optimizer would leave in TF, and why.

The decision is the optimizer's own: the GraphDef goes to the op library's
DiscExplainGraph (tf_disc/grappler/explain_bridge.h), which runs the same
analysis DiscOptimizer runs (support table, device, state, control-flow
frames, static shapes, minimum cluster size) and returns a reason per node.
This module only turns functions into GraphDefs and counts, and adds what
the self-guard chose for the function's clusters so far (disc.stats(): the
optimizer records which clusters each graph it rewrote launches)."""
from __future__ import annotations

import collections
import ctypes
import dataclasses
import json
from typing import Any, Optional

@dataclasses.dataclass
class Explanation:
    """Per node: cluster index or the reason it stays in TF; coverage =
    compute ops in clusters / compute ops (a node's "compute" flag is the op
    library's IsNonComputeOp: placeholders, args, constants, NoOp are not)."""
    nodes: list[dict]
    clusters: list[list[str]]
    min_cluster_size: int
    # The self-guard's slots of the clusters this function's graph launched
    # in this process so far (disc.stats()), each with its cluster's name:
    # per key and size bucket, whether calls run compiled ("disc"), in TF
    # ("tf") or are still being timed ("sampling"), and the medians.
    self_guard: list[dict] = dataclasses.field(default_factory=list)

    @property
    def not_clustered(self) -> list[dict]:
        return [n for n in self.nodes if n["cluster"] < 0 and n["compute"]]

    @property
    def reasons(self) -> dict[str, list[str]]:
        """Reason kind ("unsupported op", "device", ...) -> node names."""
        out: dict[str, list[str]] = collections.defaultdict(list)
        for n in self.not_clustered:
            out[n["reason"].split(":", 1)[0]].append(n["name"])
        return dict(out)

    @property
    def compute_ops(self) -> int:
        return sum(1 for n in self.nodes if n["compute"])

    def cluster_coverage(self) -> list[float]:
        by_name = {n["name"]: n for n in self.nodes}
        total = max(self.compute_ops, 1)
        return [sum(1 for m in c if by_name[m]["compute"]) / total
                for c in self.clusters]

    @property
    def coverage(self) -> float:
        clustered = sum(1 for n in self.nodes
                        if n["cluster"] >= 0 and n["compute"])
        return clustered / self.compute_ops if self.compute_ops else 1.0

    def to_dict(self) -> dict:
        return {"coverage": self.coverage, "compute_ops": self.compute_ops,
                "min_cluster_size": self.min_cluster_size,
                "clusters": [{"nodes": c, "coverage": cov}
                             for c, cov in zip(self.clusters, self.cluster_coverage())],
                "not_clustered": [{k: n[k] for k in ("name", "op", "reason")}
                                  for n in self.not_clustered],
                "reasons": self.reasons, "self_guard": self.self_guard}

    def __str__(self) -> str:
        lines = [f"coverage {self.coverage:.1%} of {self.compute_ops} compute ops in "
                 f"{len(self.clusters)} cluster(s) (min size {self.min_cluster_size})"]
        for i, (c, cov) in enumerate(zip(self.clusters, self.cluster_coverage())):
            lines.append(f"  cluster {i}: {len(c)} nodes, {cov:.1%}: {', '.join(c[:8])}"
                         + (" ..." if len(c) > 8 else ""))
        if self.not_clustered:
            lines.append("not clustered:")
            lines += [f"  {n['name']} ({n['op']}): {n['reason']}" for n in self.not_clustered]
        if self.self_guard:
            lines.append("self-guard (calls so far):")
            lines += [f"  {_guard_line(s)}" for s in self.self_guard]
        return "\n".join(lines)


_ROUTES = {"disc": "runs compiled", "tf": "runs in TF", "sampling": "timing both"}


def _guard_line(slot: dict) -> str:
    medians = (f" (compiled {slot['executable_ms']:.3g} ms, TF {slot['tf_ms']:.3g} ms)"
               if slot["executable_ms"] and slot["tf_ms"] else "")
    return (f"{slot['cluster']} key {slot['key']} size bucket {slot['bucket']}: "
            f"{_ROUTES.get(slot['route'], slot['route'])}{medians}")


def _graph_id(fn_or_graph: Any) -> Optional[str]:
    """The name Grappler knew a concrete function's graph by, or None for
    graphs that ran in no function (TF1, GraphDefs)."""
    name = getattr(fn_or_graph, "name", None)
    if hasattr(fn_or_graph, "structured_outputs") and name:
        return name.decode() if isinstance(name, bytes) else str(name)
    return None


def _guard_slots(stats: dict, graph_id: Optional[str]) -> list[dict]:
    """The self-guard slots of graph_id's clusters (disc.stats() layout)."""
    if graph_id is None:
        return []
    names = stats.get("optimizer", {}).get("graph_clusters", {}).get(graph_id, [])
    clusters = stats.get("clusters", {})
    return [{"cluster": name, **slot} for name in names if name in clusters
            for slot in clusters[name]["self_guard"]["slots"]]


def _graph_def(fn_or_graph: Any, args: tuple):
    import tensorflow as tf

    if isinstance(fn_or_graph, tf.compat.v1.GraphDef):
        return fn_or_graph
    if isinstance(fn_or_graph, tf.Graph):
        return fn_or_graph.as_graph_def()
    if hasattr(fn_or_graph, "graph") and hasattr(fn_or_graph, "structured_outputs"):
        return fn_or_graph.graph.as_graph_def()  # ConcreteFunction
    if callable(fn_or_graph):
        return tf.function(fn_or_graph).get_concrete_function(*args).graph.as_graph_def()
    raise TypeError(f"explain() takes a tf.function, a concrete function, a tf.Graph or a "
                    f"GraphDef, not {type(fn_or_graph).__name__}")


def _call_library(graph_bytes: bytes, options: dict) -> dict:
    from . import api

    with api._session.lock:
        lib = api._session.attach_compiler()
    c = ctypes.CDLL(lib.path)  # the same handle tf.load_op_library opened
    c.DiscExplainGraph.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_char_p,
                                   ctypes.c_char_p, ctypes.c_int64]
    c.DiscExplainGraph.restype = ctypes.c_int64
    opts = json.dumps(options).encode()
    size = 1 << 16
    while True:
        buf = ctypes.create_string_buffer(size)
        needed = c.DiscExplainGraph(graph_bytes, len(graph_bytes), opts, buf, size)
        if needed < size:
            return json.loads(buf.value.decode())
        size = needed + 1


def explain(fn_or_graph: Any, *args: Any, min_cluster_size: Optional[int] = None,
            fed: tuple[str, ...] = ()) -> Explanation:
    """Which ops of fn_or_graph the optimizer would cluster, and why not the
    others.  fn_or_graph: a tf.function (traced with args, or its
    input_signature), a concrete function, a tf.Graph or a GraphDef; fed:
    node names the caller feeds (TF1 sessions).  For a function that has run,
    .self_guard lists the self-guard's choices for its clusters."""
    from . import api

    if hasattr(fn_or_graph, "get_concrete_function"):  # tf.function: its trace for args
        fn_or_graph = fn_or_graph.get_concrete_function(*args)
    gdef = _graph_def(fn_or_graph, args)
    size = min_cluster_size if min_cluster_size is not None else api.options().min_cluster_size
    reply = _call_library(gdef.SerializeToString(),
                          {"min_cluster_size": int(size), "fed": list(fed),
                           "device": api.options().device})
    if "error" in reply:
        raise ValueError(f"explain(): {reply['error']}")
    guard = _guard_slots(api.stats(), _graph_id(fn_or_graph))
    return Explanation(reply["nodes"], reply["clusters"], reply["min_cluster_size"], guard)
