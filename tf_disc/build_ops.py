"""Builds tf_disc/python/libblade_disc_tf.so against the installed TF wheel.

Usage: python tf_disc/build_ops.py [--force]   or   build(force=False) -> path.

Sources and extra flags come from tf_disc/sources.json (shared with a future
Bazel build).  Translation units compile in parallel; a stamp holding a hash
of flags + source contents lets an up-to-date library skip the rebuild.
"""
import argparse
import concurrent.futures
import glob
import hashlib
import json
import os
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_OUT = os.path.join(_HERE, "python", "libblade_disc_tf.so")
_OBJ_DIR = os.path.join(os.path.dirname(_HERE), "build", "obj")


def _config():
    with open(os.path.join(_HERE, "sources.json")) as f:
        return json.load(f)


def _flags(cfg):
    import tensorflow as tf  # Imported lazily: only a build needs it.

    inc = tf.sysconfig.get_include()
    cflags = list(tf.sysconfig.get_compile_flags())
    cflags += ["-I" + os.path.normpath(os.path.join(_HERE, d))
               for d in cfg.get("include_dirs", [])]
    farmhash = os.path.join(inc, "external", "farmhash_archive", "src")
    if os.path.isdir(farmhash):  # fingerprint.h includes farmhash.h
        cflags.append("-I" + farmhash)
    cflags += cfg.get("extra_cflags", [])
    # Only libtensorflow_framework.so.2: never a second protobuf/libpython.
    ldflags = list(tf.sysconfig.get_link_flags()) + cfg.get("extra_ldflags", [])
    return cflags, ldflags


def _deps_hash(cfg, cflags, ldflags):
    """Hash of flags, the compiler and every source/header of the library."""
    h = hashlib.sha256()
    h.update(json.dumps([cflags, ldflags, sys.version]).encode())
    files = [os.path.join(_HERE, s) for s in cfg["sources"]]
    files += sorted(glob.glob(os.path.join(_HERE, "*", "*.h")))
    files.append(os.path.join(_HERE, "sources.json"))
    for path in files:
        h.update(path.encode())
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def _compile(src, obj, cflags, headers_digest, force):
    """Compiles one unit unless its object matches (flags, source, headers)."""
    h = hashlib.sha256((headers_digest + json.dumps(cflags)).encode())
    with open(src, "rb") as f:
        h.update(f.read())
    key = h.hexdigest()
    if not force and os.path.exists(obj) and os.path.exists(obj + ".stamp"):
        with open(obj + ".stamp") as f:
            if f.read().strip() == key:
                return obj
    cmd = ["g++", "-c", src, "-o", obj + ".tmp"] + cflags
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("compiling %s failed:\n%s" % (src, proc.stderr))
    os.replace(obj + ".tmp", obj)
    with open(obj + ".stamp", "w") as f:
        f.write(key + "\n")
    return obj


def build(force=False, verbose=True):
    """Builds the library if stale (or force) and returns its path."""
    cfg = _config()
    cflags, ldflags = _flags(cfg)
    stamp_path = os.path.join(os.path.dirname(_OBJ_DIR), "libblade_disc_tf.stamp")
    digest = _deps_hash(cfg, cflags, ldflags)
    if not force and os.path.exists(_OUT) and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if f.read().strip() == digest:
                return _OUT
    start = time.time()
    os.makedirs(_OBJ_DIR, exist_ok=True)
    jobs = max(1, min(len(cfg["sources"]), os.cpu_count() or 2))
    hh = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(_HERE, "*", "*.h"))):
        with open(path, "rb") as f:
            hh.update(path.encode() + f.read())
    objs = []
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = []
        for src in cfg["sources"]:
            obj = os.path.join(_OBJ_DIR, src.replace("/", "_") + ".o")
            # Per-source flags (sources.json "source_cflags") come last.
            flags = cflags + cfg.get("source_cflags", {}).get(src, [])
            futures.append(pool.submit(_compile, os.path.join(_HERE, src), obj,
                                       flags, hh.hexdigest(), force))
        objs = [f.result() for f in futures]
    tmp = _OUT + ".tmp%d" % os.getpid()
    cmd = ["g++", "-shared", "-o", tmp] + objs + ldflags
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("linking failed:\n" + proc.stderr)
    # Rename, never overwrite in place: a loaded copy may be mapped.
    os.replace(tmp, _OUT)
    with open(stamp_path, "w") as f:
        f.write(digest + "\n")
    if verbose:
        print("built %s in %.1f s" % (_OUT, time.time() - start))
    return _OUT


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--force", action="store_true", help="rebuild all")
    args = parser.parse_args()
    print(build(force=args.force))


if __name__ == "__main__":
    main()
