"""TF1 SavedModels (signature_defs, no object graph): every MetaGraphDef is
clustered over the fetches of all its signatures (the saver, init and table
ops stay), compiled, and written back into a copy of the SavedModel whose
variables and assets are copied unchanged."""
from __future__ import annotations

import os
import shutil
from typing import Callable, Dict, Sequence

from . import _aot
from ._offline_cluster import cluster_meta_graph, has_launches


def _fetches(meta) -> list:
    """Every tensor or op the MetaGraphDef names outside its graph: signature
    inputs and outputs, the saver, collection members and the variables'
    snapshot/initializer tensors (the v1 loader rebuilds variables from them),
    so clustering keeps them all."""
    from tensorflow.core.framework import variable_pb2

    names = [t.name for sig in meta.signature_def.values()
             for t in list(sig.inputs.values()) + list(sig.outputs.values()) if t.name]
    saver = meta.saver_def
    names += [n for n in (saver.filename_tensor_name, saver.save_tensor_name,
                          saver.restore_op_name) if n]
    for collection in meta.collection_def.values():
        names += list(collection.node_list.value)
        for blob in collection.bytes_list.value:
            var = variable_pb2.VariableDef()
            try:
                var.ParseFromString(blob)
            except Exception:  # noqa: BLE001 - not every bytes collection holds variables
                continue
            if var.variable_name:
                names += [n for n in (var.variable_name, var.initializer_name,
                                      var.snapshot_name, var.initial_value_name) if n]
    return names


def convert(src: str, dst: str, saved_model, compile_options, min_cluster_size: int,
            library_path: str, progress: Callable[[str], None],
            target_isas: Sequence[str] = ()) -> Dict[str, list]:
    """Converts every MetaGraphDef of `saved_model` (parsed saved_model.pb);
    returns {"<tags>/<signatures>": [ClusterReport]}."""
    import tensorflow as tf

    reports = {}
    for meta in saved_model.meta_graphs:
        label = ",".join(meta.meta_info_def.tags) + ":" + ",".join(sorted(meta.signature_def))
        if has_launches(meta.graph_def) or not meta.signature_def:
            why = "already converted" if meta.signature_def else "no signatures"
            progress(f"signatures {label}: {why}, kept as is")
            reports[label] = []
            continue
        out = cluster_meta_graph(meta, _fetches(meta), min_cluster_size)
        n = sum(node.op == _aot.DISC_LAUNCH for node in out.node)
        progress(f"signatures {label}: {n} cluster(s)")
        reports[label] = _aot.compile_launches(out, dict, compile_options,
                                               library_path, progress, target_isas)
        meta.graph_def.CopyFrom(out)
    os.makedirs(dst, exist_ok=True)
    for sub in ("variables", "assets", "assets.extra"):
        if os.path.isdir(os.path.join(src, sub)):
            shutil.copytree(os.path.join(src, sub), os.path.join(dst, sub), dirs_exist_ok=True)
    with tf.io.gfile.GFile(os.path.join(dst, "saved_model.pb"), "wb") as f:
        f.write(saved_model.SerializeToString())
    return reports
