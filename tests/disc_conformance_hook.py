"""Plugin hook for ../shared/disc_tf_ops/run.py (the BladeDISC TF op suite).

Forces clustering (minimum cluster size 1, so single ops compile) and turns off
Grappler's constant folding and its small-graph skip so that ops fed by constants reach the compiler
instead of being folded away by TF.  After each case, plugin_stats() reports
whether the case's ops really ran compiled: a DiscLaunch ran without falling
back, and the optimizer left no compute op in TF (so a case whose op stays in
TF next to a compiled Identity does not count); otherwise it is reported as
not compiled, with the reason."""
from __future__ import annotations

import blade_disc_tf as disc


def enable_plugin(config):
    from tensorflow.core.protobuf import rewriter_config_pb2

    disc.enable(min_cluster_size=1)
    config = disc.session_config(config, min_cluster_size=1)
    rewrite = config.graph_options.rewrite_options
    rewrite.constant_folding = rewriter_config_pb2.RewriterConfig.OFF
    rewrite.min_graph_nodes = -1   # Grappler skips graphs under 4 nodes otherwise
    disc.reset_stats()
    return config


def plugin_stats() -> dict:
    stats = disc.stats()
    clusters = stats["clusters"]
    left = stats["optimizer"]["ops_left_in_tf"]
    disc.reset_stats()
    runs = sum(c["runs"] for c in clusters.values())
    fallbacks = {r: n for c in clusters.values() for r, n in c["fallback_reasons"].items()}
    if runs == 0:
        return {"compiled": False, "reason": "no DiscLaunch ran (nothing clustered)"}
    if fallbacks:
        return {"compiled": False, "reason": "fell back to TF: " + "; ".join(sorted(fallbacks))}
    if left:
        return {"compiled": False, "reason": "left in TF: " + ", ".join(sorted(left))}
    return {"compiled": True, "clusters": len(clusters), "runs": runs,
            "compiles": sum(c["compiles"] + c["disk_cache_hits"] for c in clusters.values())}
