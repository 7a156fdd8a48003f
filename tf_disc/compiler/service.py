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

from .build.cache import build
from .codegen import generate_source
from .errors import CompileError
from .frontend import lower_graph, parse_function_def
from .frontend.graph import to_pbtxt
from .options import CompileOptions
from .passes.fast_math import apply_fast_math
from .passes.pipeline import run_pipeline

log = logging.getLogger("blade_disc_tf.compiler")


def _dump_dir(options: CompileOptions, request: dict) -> str | None:
    if not options.dump_dir:
        return None
    fn = re.sub(r"[^\w.\-]", "_", str(request.get("function", "cluster")))[:120] or "cluster"
    sig = repr((request.get("key"), request.get("inputs")))
    d = os.path.join(options.dump_dir, fn, hashlib.sha256(sig.encode()).hexdigest()[:16])
    os.makedirs(d, exist_ok=True)
    return d


def compile_to_source(request: dict, fdef: bytes, dump_dir: str | None = None,
                      fast_math: str = "") -> str:
    """FunctionDef + signature -> C++ source (no system compiler involved);
    fast_math "bf16" marks float GEMMs for bf16 (passes/fast_math.py)."""
    graph = parse_function_def(fdef)
    if dump_dir:
        with open(os.path.join(dump_dir, "tf_graph.pbtxt"), "w") as f:
            f.write(to_pbtxt(fdef))
    func = lower_graph(graph, list(request.get("inputs", [])))
    func = apply_fast_math(run_pipeline(func, dump_dir), fast_math)
    source = generate_source(func)
    if dump_dir:
        with open(os.path.join(dump_dir, "kernel.cc"), "w") as f:
            f.write(source)
    return source


def compile_request(request: dict, fdef: bytes, options: CompileOptions) -> dict:
    """Compile one cluster for one rank signature; reply per disc_bridge.h."""
    t0 = time.monotonic()
    try:
        dump_dir = _dump_dir(options, request)
        # The request's mode is the one DiscLaunch put in its cache key.
        fast_math = request.get("fast_math", options.fast_math) or ""
        source = compile_to_source(request, fdef, dump_dir, fast_math)
        path, compiled, key = build(
            source, options.cache_dir, options.cxx, tuple(options.extra_cflags),
            options.forbid_compile, options.timeout_s,
            os.path.join(dump_dir, "compile.log") if dump_dir else None)
        secs = time.monotonic() - t0
        log.info("cluster %s -> %s (compiled=%s, %.2fs)", request.get("function"), path,
                 compiled, secs)
        return {"ok": True, "path": os.path.abspath(path), "compiled": compiled,
                "seconds": secs}
    except CompileError as e:
        reason = str(e)
    except Exception as e:  # noqa: BLE001 - the contract is "never raise"
        log.debug("compiler crashed:\n%s", traceback.format_exc())
        reason = f"internal compiler error: {type(e).__name__}: {e}"
    reason = " ".join(reason.split())[:1000]
    # INFO, not WARNING: the caller (the compile bridge) logs the one warning line.
    log.info("cluster %s not compiled: %s", request.get("function"), reason)
    return {"ok": False, "error": reason}
