"""Clustering a graph offline, for the SavedModel converter: Grappler's
function inlining (signature bodies are calls into the model's functions)
followed by DiscOptimizer, the same rewrite the plugin does at run time."""
from __future__ import annotations

from typing import Iterable

DISC_LAUNCH = "DiscLaunch"


def has_launches(graph_def) -> bool:
    """True when the graph (or a function of its library) already holds
    DiscLaunch ops: it was converted before and must not be clustered again."""
    if any(n.op == DISC_LAUNCH for n in graph_def.node):
        return True
    return any(n.op == DISC_LAUNCH for f in graph_def.library.function for n in f.node_def)


def cluster_meta_graph(meta_graph, fetches: Iterable[str], min_cluster_size: int):
    """Runs inlining + DiscOptimizer over `meta_graph` (a MetaGraphDef, copied)
    keeping `fetches` (tensor names) alive; returns the rewritten GraphDef."""
    from tensorflow.core.protobuf import config_pb2, meta_graph_pb2
    from tensorflow.python.grappler import tf_optimizer

    item = meta_graph_pb2.MetaGraphDef()
    item.CopyFrom(meta_graph)
    fetch = meta_graph_pb2.CollectionDef()
    fetch.node_list.value.extend(sorted(set(fetches)))
    item.collection_def["train_op"].CopyFrom(fetch)  # Grappler's fetch list
    config = config_pb2.ConfigProto()
    rewrite = config.graph_options.rewrite_options
    rewrite.min_graph_nodes = -1
    rewrite.meta_optimizer_iterations = rewrite.ONE
    rewrite.optimizers.append("function")
    custom = rewrite.custom_optimizers.add()
    custom.name = "DiscOptimizer"
    custom.parameter_map["min_cluster_size"].i = int(min_cluster_size)
    return tf_optimizer.OptimizeGraph(config, item, graph_id=b"disc_convert")
