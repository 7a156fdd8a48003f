"""Runs in a FRESH process, as a serving process would: only the op library is
loaded, the Python compiler cannot be imported and `c++` on PATH fails.  Runs
the original and the converted SavedModel on the same random inputs and
prints one JSON line: max errors, DiscLaunch stats, load and first-request
times.  With --save-io it also writes inputs and reference outputs as raw
float32 files for the C++ serving program.  --warm-up first loads and runs
the original once, untimed, so that neither timed model pays TF's one-time
start-up (otherwise the first model loaded does).

usage: serving_check.py ORIGINAL CONVERTED FORMAT SIGNATURE SHAPES_JSON
                        [--save-io DIR] [--warm-up]
"""
from __future__ import annotations

import importlib.abc
import json
import os
import sys
import time


class _BlockCompiler(importlib.abc.MetaPathFinder):
    """Makes `blade_disc_tf.compiler` unimportable in this process."""

    def find_spec(self, name, path=None, target=None):
        if name == "blade_disc_tf.compiler" or name.startswith("blade_disc_tf.compiler."):
            raise ImportError(f"{name} is blocked: serving runs without the compiler")
        return None


sys.meta_path.insert(0, _BlockCompiler())

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def _inputs(shapes, names, seed):
    rng = np.random.default_rng(seed)
    return [{n: rng.standard_normal(s).astype(np.float32) for n in names} for s in shapes]


class _TF2:
    def __init__(self, path, signature):
        start = time.perf_counter()
        self.fn = tf.saved_model.load(path).signatures[signature]
        self.load_s = time.perf_counter() - start
        self.names = sorted(self.fn.structured_input_signature[1])

    def __call__(self, feed):
        out = self.fn(**{k: tf.constant(v) for k, v in feed.items()})
        return {k: v.numpy() for k, v in out.items()}


class _TF1:
    def __init__(self, path, signature):
        start = time.perf_counter()
        self.session = tf.compat.v1.Session(graph=tf.Graph())
        meta = tf.compat.v1.saved_model.load(self.session, ["serve"], path)
        self.load_s = time.perf_counter() - start
        sig = meta.signature_def[signature]
        self.inputs = {k: v.name for k, v in sig.inputs.items()}
        self.outputs = {k: v.name for k, v in sig.outputs.items()}
        self.names = sorted(self.inputs)

    def __call__(self, feed):
        got = self.session.run(self.outputs, {self.inputs[k]: v for k, v in feed.items()})
        return dict(got)


def _save_io(directory, feeds, outs):
    os.makedirs(directory, exist_ok=True)
    for i, (feed, out) in enumerate(zip(feeds, outs)):
        for kind, tensors in (("in", feed), ("out", out)):
            for name, value in tensors.items():
                stem = os.path.join(directory, f"{kind}{i}_{name}")
                np.ascontiguousarray(value, np.float32).tofile(stem + ".bin")
                with open(stem + ".shape", "w") as f:
                    f.write(" ".join(str(d) for d in value.shape))


def main(argv):
    original, converted, fmt, signature, shapes = argv[:5]
    shapes = [tuple(s) for s in json.loads(shapes)]
    import blade_disc_tf as disc

    disc.load_ops()
    model_cls = _TF2 if fmt == "tf2" else _TF1
    feeds = None
    if "--warm-up" in argv:
        warm = model_cls(original, signature)
        feeds = _inputs(shapes, warm.names, seed=len(shapes))
        warm(feeds[0])
    models, times = {}, {}
    for label, path in (("original", original), ("converted", converted)):
        model = models[label] = model_cls(path, signature)
        feeds = feeds or _inputs(shapes, model.names, seed=len(shapes))
        start = time.perf_counter()
        model(feeds[0])
        times[label] = {"load_s": model.load_s, "first_request_s": time.perf_counter() - start}
    ref_model, new_model = models["original"], models["converted"]
    refs, errors = [], []
    for feed in feeds:
        ref, got = ref_model(feed), new_model(feed)
        refs.append(ref)
        errors.append({k: float(np.max(np.abs(ref[k] - got[k]) / (1.0 + np.abs(ref[k]))))
                       if ref[k].shape == got[k].shape else float("inf") for k in ref})
    if "--save-io" in argv:
        _save_io(argv[argv.index("--save-io") + 1], feeds, refs)
    everything = disc.stats()
    stats = everything["clusters"]
    print(json.dumps({
        "embedded_tiers": everything["embedded_tiers"], "cpu": everything["cpu"],
        "errors": errors, "times": times,
        "compiles": sum(c["compiles"] + c["disk_cache_hits"] for c in stats.values()),
        "runs": sum(c["runs"] for c in stats.values()),
        "cache_hits": sum(c["cache_hits"] for c in stats.values()),
        "fallback_reasons": {r: n for c in stats.values() for r, n in c["fallback_reasons"].items()},
        "clusters_created": disc.stats()["optimizer"].get("clusters_created", 0),
        "compiler_imported": any(m.startswith("blade_disc_tf.compiler") for m in sys.modules),
    }))


if __name__ == "__main__":
    main(sys.argv[1:])
