"""compile_request: the one entry the op library's compile callback calls.

request (disc_bridge.h) + FunctionDef bytes -> reply dict.  Never raises:
every failure becomes {"ok": False, "error": "<one line>"}.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import time
import traceback

from .build import request_index
from .build.cache import build, usable_cache_dir
from .errors import CompileError
from .frontend import lower_graph, parse_function_def
from .frontend.functions import nested_functions
from .frontend.graph import to_pbtxt
from .ir.core import Func
from .options import CompileOptions
from .passes.fast_math import apply_fast_math
from .passes.pipeline import run_pipeline
from .passes.program import Program, has_control_flow
from .program_pipeline import lower_program
from .target import Target, get_target, target_for

log = logging.getLogger("blade_disc_tf.compiler")
# CPU priority of the system compiler in an asynchronous compile (the
# requests that TF runs meanwhile come first); a sync compile keeps 0, since
# every request waits for it.
BACKGROUND_NICE = 15


def _dump_dir(options: CompileOptions, request: dict) -> str | None:
    if not options.dump_dir:
        return None
    fn = re.sub(r"[^\w.\-]", "_", str(request.get("function", "cluster")))[:120] or "cluster"
    sig = repr((request.get("key"), request.get("inputs")))
    d = os.path.join(options.dump_dir, fn, hashlib.sha256(sig.encode()).hexdigest()[:16])
    os.makedirs(d, exist_ok=True)
    return d


def _lower(request: dict, fdef: bytes, dump_dir: str | None, fast_math: str,
           target: Target) -> Func | Program:
    """FunctionDef + signature -> IR after the target's pass pipeline; a
    function with loops as a Program whose every segment went through it."""
    graph = parse_function_def(fdef)
    if dump_dir:
        with open(os.path.join(dump_dir, "tf_graph.pbtxt"), "w") as f:
            f.write(to_pbtxt(fdef))
    func = lower_graph(graph, list(request.get("inputs", [])), nested_functions(fdef))
    if has_control_flow(func):
        return lower_program(func, dump_dir, fast_math, target)
    func = apply_fast_math(run_pipeline(func, target.passes(), dump_dir), fast_math)
    target.check_supported(func)
    return func


def compile_to_source(request: dict, fdef: bytes, dump_dir: str | None = None,
                      fast_math: str = "", target: Target | None = None) -> str:
    """FunctionDef + signature -> source (no system compiler involved);
    fast_math "bf16" marks float GEMMs for bf16 (passes/fast_math.py);
    target: the default target's (CPU) unless given."""
    return compile_to_units(request, fdef, dump_dir, fast_math, 1, target)[0]


def compile_to_units(request: dict, fdef: bytes, dump_dir: str | None = None,
                     fast_math: str = "", units: int = 1,
                     target: Target | None = None) -> tuple[str, list[str]]:
    """(compile_to_source's text, the same code split into at most `units`
    translation units for a parallel build: Target.generate)."""
    target = target or get_target()
    lowered = _lower(request, fdef, dump_dir, fast_math, target)
    if isinstance(lowered, Program):
        single, sources = target.generate_program(lowered, units)
    else:
        single, sources = target.generate(lowered, units)
    if dump_dir:
        for name, source in zip(target.unit_names(len(sources)), sources):
            with open(os.path.join(dump_dir, name), "w") as f:
                f.write(source)
    return single, sources


def _allowed_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _runnable_now() -> int:
    """Tasks running or ready to run now, this thread included (/proc/loadavg's
    fourth field); 1 when unknown."""
    try:
        with open("/proc/loadavg") as f:
            return max(1, int(f.read().split()[3].split("/")[0]))
    except (OSError, IndexError, ValueError):
        return 1


def _runnable_tasks(samples: int = 5, interval_s: float = 0.0025) -> int:
    """The fewest runnable tasks over ~10 ms.  One sample taken as a
    synchronous compile starts counts TF's pool threads still spinning for
    work (measured: 2-3 for 3-6 ms, then 1), which halved the units of every
    sync compile; threads that are really busy (other processes, requests
    beside an async compile) stay in every sample."""
    fewest = _runnable_now()
    for _ in range(samples - 1):
        if fewest == 1:
            break
        time.sleep(interval_s)
        fewest = min(fewest, _runnable_now())
    return fewest


def parallel_units(cpus: int, runnable: int) -> int:
    """Translation units to compile at once: one per CPU nothing else is
    running on.  Splitting costs ~5% more CPU in all (each unit parses the
    prelude, then a link), so on busy CPUs (other processes, or this one's TF
    requests while an async compile runs) one unit finishes sooner."""
    return max(1, min(cpus, cpus - (runnable - 1)))


def target_flags(request: dict, options: CompileOptions) -> tuple:
    """The request's target's compiler flags for it (e.g. its ISA tier,
    build/isa.py), then the caller's extra flags."""
    return target_for(request, options).build_flags(request, options)


def _indexed(request: dict, fdef: bytes, fast_math: str, target: Target, extra: tuple,
             options: CompileOptions,
             dump_dir: str | None) -> tuple[str | None, str | None]:
    """(request key, the library the disk cache holds for it or None):
    build/request_index.py.  No key with a dump dir: a dump asks for the
    pipeline's files, so the pipeline runs."""
    if dump_dir:
        return None, None
    rkey = request_index.request_key(request, fdef, fast_math, target.cache_identity(),
                                     options.cxx, extra, options.timeout_s)
    directory, why = usable_cache_dir(options.cache_dir)
    return rkey, (request_index.lookup(directory, rkey) if why is None else None)


def _hit_reply(request: dict, hit: str, t0: float) -> dict:
    secs = time.monotonic() - t0
    log.info("cluster %s -> %s (indexed, %.3fs)", request.get("function"), hit, secs)
    return {"ok": True, "path": os.path.abspath(hit), "compiled": False, "seconds": secs}


def indexed_reply(request: dict, fdef: bytes, options: CompileOptions) -> dict | None:
    """compile_request's reply when the disk cache's request index holds the
    library (no lowering, no code generation); None when it does not, or on
    any error (compile_request then says what)."""
    t0 = time.monotonic()
    try:
        fast_math = request.get("fast_math", options.fast_math) or ""
        target = target_for(request, options)
        extra = target.build_flags(request, options)
        _, hit = _indexed(request, fdef, fast_math, target, extra, options,
                          _dump_dir(options, request))
    except Exception:  # noqa: BLE001 - the full compile reports it
        return None
    return None if hit is None else _hit_reply(request, hit, t0)


def compile_request(request: dict, fdef: bytes, options: CompileOptions) -> dict:
    """Compile one cluster for one rank signature; reply per disc_bridge.h."""
    t0 = time.monotonic()
    try:
        dump_dir = _dump_dir(options, request)
        # The request's mode is the one DiscLaunch put in its cache key.
        fast_math = request.get("fast_math", options.fast_math) or ""
        target = target_for(request, options)
        extra = target.build_flags(request, options)
        rkey, hit = _indexed(request, fdef, fast_math, target, extra, options, dump_dir)
        if hit is not None:
            return _hit_reply(request, hit, t0)
        units = parallel_units(_allowed_cpus(), _runnable_tasks())
        t_codegen = time.monotonic()
        library, sources = compile_to_units(request, fdef, dump_dir, fast_math, units, target)
        codegen_secs = time.monotonic() - t_codegen
        path, compiled, key = build(
            sources, options.cache_dir, options.cxx, extra,
            options.forbid_compile, options.timeout_s,
            os.path.join(dump_dir, "compile.log") if dump_dir else None, key_source=library,
            nice=BACKGROUND_NICE if options.background else 0, target=target.cache_identity(),
            prelude=target.precompiled_header(), builder=target.library_builder(options))
        if rkey:
            request_index.record(os.path.dirname(path), rkey, key)
        secs = time.monotonic() - t0
        log.info("cluster %s -> %s (compiled=%s, %.2fs, %.2fs of them codegen)",
                 request.get("function"), path, compiled, secs, codegen_secs)
        return {"ok": True, "path": os.path.abspath(path), "compiled": compiled,
                "seconds": secs, "codegen_seconds": codegen_secs}
    except CompileError as e:
        reason = str(e)
    except Exception as e:  # noqa: BLE001 - the contract is "never raise"
        log.debug("compiler crashed:\n%s", traceback.format_exc())
        reason = f"internal compiler error: {type(e).__name__}: {e}"
    reason = " ".join(reason.split())[:1000]
    # INFO, not WARNING: the caller (the compile bridge) logs the one warning line.
    log.info("cluster %s not compiled: %s", request.get("function"), reason)
    return {"ok": False, "error": reason}
