"""convert_saved_model: compile a SavedModel's clusters once, ahead of time,
and write a SavedModel that serving processes run with only the op library
(no Python compiler, no system compiler, no compile on the first request).

Each DiscLaunch of the output carries its executables (attr `executables`,
see tf_disc/ops/embedded.h); clusters whose key cannot be known ahead of time
(an input of unknown rank, a needed value computed at run time) or that fail
to compile keep compiling at run time where a compiler is attached and run
in TensorFlow elsewhere.  Variables, signature names, dtypes and shapes are
unchanged."""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Callable, Dict, List, Optional, Sequence


@dataclasses.dataclass
class ConversionSummary:
    """Per-graph cluster reports plus the totals the CLI prints."""

    format: str                     # "tf2" or "tf1"
    reports: Dict[str, list]        # signature (or tags:signatures) -> [ClusterReport]
    seconds: float = 0.0

    @property
    def clusters(self) -> list:
        return [r for reps in self.reports.values() for r in reps]

    @property
    def compiled(self) -> int:
        return sum(r.compiled for r in self.clusters)

    @property
    def ops_covered(self) -> int:
        """Ops inside clusters that now run as embedded executables."""
        return sum(r.ops for r in self.clusters if r.compiled)

    @property
    def compile_seconds(self) -> float:
        return sum(r.seconds for r in self.clusters)

    def lines(self) -> List[str]:
        out = [f"{self.format} SavedModel: {len(self.clusters)} cluster(s), "
               f"{self.compiled} compiled ahead of time covering {self.ops_covered} op(s); "
               f"compile {self.compile_seconds:.1f}s, total {self.seconds:.1f}s"]
        out += [f"  left to run time: {r.node}: {r.reason}"
                for r in self.clusters if not r.compiled]
        return out


def _saved_model_proto(src: str):
    from tensorflow.core.protobuf import saved_model_pb2
    from tensorflow.python.lib.io import file_io

    path = os.path.join(src, "saved_model.pb")
    if not file_io.file_exists(path):
        raise FileNotFoundError(f"{src} holds no saved_model.pb (text SavedModels are not supported)")
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString(file_io.read_file_to_string(path, binary_mode=True))
    return proto


def _is_tf2(proto) -> bool:
    return any(len(m.object_graph_def.nodes) > 0 for m in proto.meta_graphs)


def convert_saved_model(src_dir: str, dst_dir: str,
                        signature_keys: Optional[Sequence[str]] = None,
                        progress: Optional[Callable[[str], None]] = None,
                        target_isas: Sequence[str] = (),
                        **options) -> ConversionSummary:
    """Converts the SavedModel in src_dir into dst_dir (which must not exist
    or be empty).  signature_keys: TF2 signatures to convert (default all).
    progress: called with one line per signature and per cluster.
    target_isas: the x86-64 tiers ("x86-64-v2", "avx2", "avx512",
    "avx512_bf16", "avx512_amx") to embed an executable for, each cluster once per tier;
    the serving machine runs the best one its CPU supports (default: avx2,
    avx512 and this machine's tier).
    options: blade_disc_tf options for this conversion (cache_dir, cxx,
    min_cluster_size, ...)."""
    from . import api
    from ._compile_bridge import _compile_options

    if os.path.abspath(src_dir) == os.path.abspath(dst_dir):
        raise ValueError("dst_dir must differ from src_dir")
    if os.path.isdir(dst_dir) and os.listdir(dst_dir):
        raise FileExistsError(f"{dst_dir} exists and is not empty")
    progress = progress or (lambda line: None)
    start = time.monotonic()
    proto = _saved_model_proto(src_dir)
    opts = api.options().replace(**options)
    with api._session.lock:  # noqa: SLF001 - the converter needs the compiler's support table
        library = api._session.attach_compiler()  # noqa: SLF001
    common = dict(compile_options=_compile_options(opts), min_cluster_size=opts.min_cluster_size,
                  library_path=library.path, progress=progress, target_isas=tuple(target_isas))
    if _is_tf2(proto):
        from . import _convert_tf2
        keys = None if signature_keys is None else list(signature_keys)
        reports = _convert_tf2.convert(src_dir, dst_dir, keys, **common)
        fmt = "tf2"
    else:
        from . import _convert_tf1
        reports = _convert_tf1.convert(src_dir, dst_dir, proto, **common)
        fmt = "tf1"
    summary = ConversionSummary(fmt, reports, time.monotonic() - start)
    for line in summary.lines():
        progress(line)
    return summary
