"""The user-facing switches: enable/disable, options, stats, TF1 session config.

One `_Session` object holds what this process has turned on; it is the only
state of the Python API and mirrors what was pushed into the op library."""
from __future__ import annotations

import threading
import time
from typing import Any, Optional

from . import _compile_bridge, _library, config


class _Session:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.options: config.Options = config.from_environment()
        self.enabled = False
        self.library: Optional[_library.OpLibrary] = None
        self.registration: Optional[_compile_bridge.CompilerRegistration] = None

    def attach_compiler(self) -> _library.OpLibrary:
        """Loads the op library and hands it the compiler and support table."""
        if self.library is None:
            self.library = _library.load()
        if self.registration is None:
            from blade_disc_tf.compiler.registry import support_table

            self.library.set_support_table(support_table())
            self.registration = _compile_bridge.CompilerRegistration(
                self.library, lambda: self.options)
        return self.library

    def push_options(self) -> None:
        if self.library is not None:
            self.library.set_options(self.options.native_json(self.enabled))


_session = _Session()


def load_ops() -> Any:
    """Loads only the op library (DiscLaunch and the optimizer), without the
    compiler: what a serving process needs to run converted models."""
    with _session.lock:
        if _session.library is None:
            _session.library = _library.load()
            _session.push_options()  # the environment's (self_guard, ...); clustering stays off
        return _session.library.ops


def enable(**options: Any) -> None:
    """Optimizes every tf.function and TF1 Session graph built from now on.

    Options (see blade_disc_tf.config): cache_dir, dump_dir, min_cluster_size,
    cxx, async_compile, compile_timeout_s, forbid_compile, self_guard, fast_math,
    target_isa, device ("gpu": also cluster GPU-placed nodes)."""
    with _session.lock:
        _session.options = _session.options.replace(**options)
        _session.attach_compiler()
        _session.enabled = True
        _session.push_options()


def disable() -> None:
    """Stops clustering graphs optimized from now on.  Graphs already
    optimized keep their DiscLaunch ops (they keep compiling as needed)."""
    with _session.lock:
        _session.enabled = False
        _session.push_options()


def is_enabled() -> bool:
    return _session.enabled


def options() -> config.Options:
    """The options in force."""
    return _session.options


def set_options(**options: Any) -> None:
    """Changes options without switching the plugin optimizer on or off."""
    with _session.lock:
        _session.options = _session.options.replace(**options)
        _session.push_options()


def session_config(config_proto: Any = None, min_cluster_size: Optional[int] = None) -> Any:
    """A tf.compat.v1.ConfigProto naming DiscOptimizer in custom_optimizers:
    the TF1 opt-in that works without enable().  Grappler's defaults run
    first, then DiscOptimizer."""
    import tensorflow as tf

    with _session.lock:
        _session.attach_compiler()
        _session.push_options()
    proto = tf.compat.v1.ConfigProto() if config_proto is None else config_proto
    rewrite = proto.graph_options.rewrite_options
    if not any(o.name == "DiscOptimizer" for o in rewrite.custom_optimizers):
        custom = rewrite.custom_optimizers.add()
        custom.name = "DiscOptimizer"
        size = _session.options.min_cluster_size if min_cluster_size is None else min_cluster_size
        custom.parameter_map["min_cluster_size"].i = int(size)
    return proto


def stats() -> dict:
    """Per-cluster counters: runs, compiles, disk_cache_hits, cache_hits,
    fallbacks and their reasons, compile_seconds, compile_log (per compile:
    key, compiled or disk-cache hit, seconds, codegen seconds of them, calls
    run in TF meanwhile), self_guard (calls the self-guard ran in TF and its
    choice per key and size bucket); plus optimizer counters
    (with ops_left_in_tf: op type -> count of compute ops the optimizer left
    outside clusters, and graph_clusters: graph (a concrete function's name)
    -> the clusters it launches), loaded_executables (libraries held by live graphs'
    kernels), embedded_tiers (embedded executables loaded, per ISA tier) and
    cpu (the detected, capped and selected ISA tiers, the kernel library
    loaded, whether fast math runs the bf16 kernel: README "CPUs")."""
    if _session.library is None:
        return {"clusters": {}, "optimizer": {}, "loaded_executables": 0}
    return _session.library.stats()


def wait_for_compiles(timeout_s: float = 600.0) -> bool:
    """Blocks until no compile is in flight (with async_compile, the calls
    meanwhile run in TF); True when none is, False after timeout_s.  For
    warm-ups before timing, and for a server that wants compiled code before
    it takes traffic."""
    if _session.library is None:
        return True
    deadline = time.monotonic() + timeout_s
    while _session.library.compiles_in_flight() > 0:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def reset_stats() -> None:
    if _session.library is not None:
        _session.library.reset_stats()


def clear_executable_cache() -> None:
    """Forgets in-memory executables: the next run goes to the disk cache."""
    if _session.library is not None:
        _session.library.clear_executable_cache()

