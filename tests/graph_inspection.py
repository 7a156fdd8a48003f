"""Reading the graphs TensorFlow executed after Grappler, for both modes."""
from __future__ import annotations

from typing import Callable, Iterable, List

import tensorflow as tf
from tensorflow.core.protobuf import config_pb2
from tensorflow.python.eager import context


def _node_ops(graph_defs: Iterable) -> List[str]:
    ops = []
    for graph_def in graph_defs:
        ops.extend(node.op for node in graph_def.node)
        for fdef in graph_def.library.function:
            ops.extend(node.op for node in fdef.node_def)
    return ops


def tf2_function_graphs(call: Callable[[], object]) -> list:
    """The run metadata's function graphs recorded while `call` ran.

    TF records a function's graphs when it instantiates (and optimizes) it, so
    `call` must be the function's first call."""
    ctx = context.context()
    ctx.enable_run_metadata()
    try:
        # Drain graphs recorded before (eager ops of earlier tests can be left
        # in the context's buffer), so only `call`'s functions are returned.
        ctx.export_run_metadata()
        call()
        return list(ctx.export_run_metadata().function_graphs)
    finally:
        ctx.disable_run_metadata()


def tf2_executed_ops(call: Callable[[], object]) -> List[str]:
    """Op types of the post-optimization graphs of the functions `call` ran
    (first call only, see tf2_function_graphs)."""
    graphs = []
    for function_graph in tf2_function_graphs(call):
        graphs.append(function_graph.post_optimization_graph)
        graphs.extend(function_graph.partition_graphs)
    return _node_ops(graphs)


def tf1_executed_ops(session: tf.compat.v1.Session, fetches, feed_dict) -> List[str]:
    """Op types of the partition graphs a TF1 session ran for one step."""
    options = config_pb2.RunOptions(output_partition_graphs=True)
    metadata = config_pb2.RunMetadata()
    session.run(fetches, feed_dict=feed_dict, options=options, run_metadata=metadata)
    return _node_ops(metadata.partition_graphs)


def cluster_stats(stats: dict) -> List[dict]:
    """The per-cluster counters, one dict per cluster function."""
    return list(stats.get("clusters", {}).values())


def total(stats: dict, counter: str) -> int:
    return sum(c.get(counter, 0) for c in cluster_stats(stats))
