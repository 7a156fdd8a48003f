"""TF2 SavedModels: each signature's concrete function is clustered, compiled
and rebuilt as a new concrete function over the same captured variables (the
approach of TF-TRT's TrtGraphConverterV2, without freezing), then the loaded
object is saved again with the rebuilt signatures."""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence

from . import _aot
from ._offline_cluster import cluster_meta_graph, has_launches


def _resource_input_map(func) -> Callable[[], dict]:
    """Placeholders carrying the captured variables' handle shapes, so that
    shape inference of the imported graph sees through ReadVariableOp."""
    import tensorflow as tf
    from tensorflow.python.ops import handle_data_util

    def make() -> dict:
        mapping = {}
        for external, internal in func.graph.captures:
            if internal.dtype != tf.resource:
                continue
            ph = tf.compat.v1.placeholder(tf.resource, internal.shape)
            handle_data_util.copy_handle_data(internal, ph)
            if not handle_data_util.get_resource_handle_data(ph).shape_and_type:
                handle_data_util.copy_handle_data(external, ph)
            mapping[internal.name] = ph
        return mapping

    return make


def _rebuild(func, graph_def):
    """A concrete function running `graph_def` with func's inputs, outputs,
    structure and captures (trt_convert._construct_function_from_graph_def)."""
    from tensorflow.python.eager import context, wrap_function
    from tensorflow.python.util import nest

    for f in graph_def.library.function:  # the converted bodies win
        while context.context().has_function(f.signature.name):
            context.context().remove_function(f.signature.name)
    captures = {internal.name.split(":")[0]: external
                for external, internal in func.graph.captures}
    n_user = len(func.inputs) - len(func.captured_inputs)
    new = wrap_function.function_from_graph_def(
        graph_def, [t.name for t in func.inputs[:n_user]],
        [t.name for t in func.outputs], captures)
    new.graph.structured_outputs = nest.pack_sequence_as(
        func.graph.structured_outputs, new.graph.structured_outputs)
    new._function_type = func.function_type  # noqa: SLF001 - as TF-TRT does
    new.graph.structured_input_signature = func.structured_input_signature
    return new


def convert(src: str, dst: str, signature_keys: Optional[List[str]], compile_options,
            min_cluster_size: int, library_path: str,
            progress: Callable[[str], None],
            target_isas: Sequence[str] = ()) -> Dict[str, list]:
    """Converts and saves; returns {signature: [ClusterReport]}."""
    import tensorflow as tf
    from tensorflow.python.training import saver

    root = tf.saved_model.load(src)
    keys = list(root.signatures.keys()) if signature_keys is None else signature_keys
    unknown = sorted(set(keys) - set(root.signatures.keys()))
    if unknown:
        raise ValueError(f"no signature(s) {unknown} in {src}")
    converted = dict(root.signatures)  # the others are saved unchanged
    reports = {}
    for key in keys:
        func = root.signatures[key]
        graph_def = func.graph.as_graph_def()
        if has_launches(graph_def):  # graph or called functions
            progress(f"signature {key}: already converted, kept as is")
            reports[key] = []
            continue
        meta = saver.export_meta_graph(graph_def=graph_def, graph=func.graph)
        out = cluster_meta_graph(meta, [t.name for t in func.inputs + func.outputs],
                                 min_cluster_size)
        n = sum(node.op == _aot.DISC_LAUNCH for node in out.node)
        progress(f"signature {key}: {n} cluster(s)")
        reports[key] = _aot.compile_launches(out, _resource_input_map(func), compile_options,
                                             library_path, progress, target_isas)
        converted[key] = _rebuild(func, out)
    tf.saved_model.save(root, dst, signatures=converted)
    return reports

