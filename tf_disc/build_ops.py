"""Builds tf_disc/python/libblade_disc_tf.so (portable) and its per-ISA
kernel libraries libblade_disc_tf_kernels_<tier>.so (runtime/cpu/kernel_table.h)
against the installed TF wheel.

Usage: python tf_disc/build_ops.py [--force]   or   build(force=False) -> path.

Sources and extra flags come from tf_disc/sources.json (shared with the
Bazel build).  Translation units compile in parallel; a stamp holding a hash
of flags + source contents lets an up-to-date library skip the rebuild.  Each
unit's own stamp hashes the files its g++ depfile (-MMD) lists, so a header
change rebuilds only the units that include it.
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


def cuda_include_dirs() -> list:
    """The CUDA header folders the TF wheel ships (cuda.h, cublasLt.h; and
    libcudacxx, whose nv/target cublasLt.h's cuda_fp16.h includes): the GPU
    runtime compiles against them and loads the libraries at run time.
    Empty when the wheel has none."""
    import tensorflow as tf  # Imported lazily: only a build needs it.

    base = os.path.join(tf.sysconfig.get_include(), "third_party", "gpus", "cuda")
    dirs = [os.path.join(base, "include"), os.path.join(base, "libcudacxx", "include")]
    return [d for d in dirs if os.path.isdir(d)]


def _flags(cfg):
    import tensorflow as tf  # Imported lazily: only a build needs it.

    inc = tf.sysconfig.get_include()
    cflags = list(tf.sysconfig.get_compile_flags())
    cflags += ["-I" + os.path.normpath(os.path.join(_HERE, d))
               for d in cfg.get("include_dirs", [])]
    farmhash = os.path.join(inc, "external", "farmhash_archive", "src")
    if os.path.isdir(farmhash):  # fingerprint.h includes farmhash.h
        cflags.append("-I" + farmhash)
    cflags += ["-I" + d for d in cuda_include_dirs()]
    cflags += cfg.get("extra_cflags", [])
    # Only libtensorflow_framework.so.2: never a second protobuf/libpython.
    ldflags = list(tf.sysconfig.get_link_flags()) + cfg.get("extra_ldflags", [])
    return cflags, ldflags


def _deps_hash(cfg, cflags, ldflags):
    """Hash of flags, the compiler and every source/header of the libraries."""
    h = hashlib.sha256()
    h.update(json.dumps([cflags, ldflags, sys.version]).encode())
    files = [os.path.join(_HERE, s) for s in cfg["sources"] + cfg["kernel_sources"]]
    files += sorted(glob.glob(os.path.join(_HERE, "**", "*.h"), recursive=True))
    files.append(os.path.join(_HERE, cfg["kernel_version_script"]))
    files.append(os.path.join(_HERE, "sources.json"))
    for path in files:
        h.update(path.encode())
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def kernel_library_name(tier: str) -> str:
    """The file of one tier's kernel library (runtime/cpu/kernel_dispatch.cc)."""
    return "libblade_disc_tf_kernels_%s.so" % tier


def _targets(cfg, cflags, ldflags):
    """(output path, [(source, object, flags)], link flags) per library: the
    portable op library, then one kernel library per ISA tier."""
    units = []
    for src in cfg["sources"]:
        units.append((src, os.path.join(_OBJ_DIR, src.replace("/", "_") + ".o"), cflags))
    targets = [(_OUT, units, ldflags)]
    script = os.path.join(_HERE, cfg["kernel_version_script"])
    kernel_ld = cfg["kernel_ldflags"] + ["-Wl,--version-script=" + script]
    for tier, tier_flags in cfg["kernel_tiers"].items():
        flags = cflags + cfg["kernel_cflags"] + tier_flags
        units = [(src, os.path.join(_OBJ_DIR, tier, src.replace("/", "_") + ".o"), flags)
                 for src in cfg["kernel_sources"]]
        targets.append((os.path.join(os.path.dirname(_OUT), kernel_library_name(tier)),
                        units, kernel_ld))
    return targets


def _link(out: str, objs: list, ldflags: list) -> None:
    tmp = out + ".tmp%d" % os.getpid()
    proc = subprocess.run(["g++", "-shared", "-o", tmp] + objs + ldflags,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("linking %s failed:\n%s" % (os.path.basename(out), proc.stderr))
    # Rename, never overwrite in place: a loaded copy may be mapped.
    os.replace(tmp, out)


def _depfile_paths(depfile: str) -> list:
    """The prerequisites of a g++ -MMD depfile ("obj: src h1 \\\n h2")."""
    with open(depfile) as f:
        text = f.read().replace("\\\n", " ")
    return sorted(set(text.split(":", 1)[1].split())) if ":" in text else []


def _unit_key(cflags: list, depfile: str, skip: tuple):
    """Hash of flags and every file the unit read, but those under `skip`
    (TF's headers: the flags name the wheel); None when one is gone."""
    h = hashlib.sha256(json.dumps(cflags).encode())
    for path in _depfile_paths(depfile):
        if path.startswith(skip):
            continue
        try:
            with open(path, "rb") as f:
                h.update(path.encode() + b"\0" + f.read())
        except OSError:
            return None
    return h.hexdigest()


def _compile(src: str, obj: str, cflags: list, force: bool, skip: tuple = ()) -> str:
    """Compiles one unit unless its object matches (flags, source and the
    headers it included last time)."""
    dep, stamp = obj + ".d", obj + ".stamp"
    if not force and all(os.path.exists(p) for p in (obj, dep, stamp)):
        with open(stamp) as f:
            if f.read().strip() == _unit_key(cflags, dep, skip):
                return obj
    cmd = ["g++", "-c", src, "-o", obj + ".tmp", "-MMD", "-MF", dep + ".tmp"] + cflags
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("compiling %s failed:\n%s" % (src, proc.stderr))
    os.replace(dep + ".tmp", dep)
    os.replace(obj + ".tmp", obj)
    if _edited_since(dep, started, skip):
        # The object may hold the old text: no stamp, so the next build compiles again.
        if os.path.exists(stamp):
            os.remove(stamp)
        return obj
    with open(stamp, "w") as f:
        f.write("%s\n" % _unit_key(cflags, dep, skip))
    return obj


def _edited_since(depfile: str, started: float, skip: tuple) -> bool:
    """Whether a file the unit read changed after its compile started."""
    for path in _depfile_paths(depfile):
        if path.startswith(skip):
            continue
        try:
            if os.path.getmtime(path) >= started:
                return True
        except OSError:
            return True
    return False


def library_paths() -> list:
    """Every library build() writes: the op library first, then the kernels."""
    cfg = _config()
    return [_OUT] + [os.path.join(os.path.dirname(_OUT), kernel_library_name(t))
                     for t in cfg["kernel_tiers"]]


def build(force=False, verbose=True):
    """Builds the op library and its kernel libraries if stale (or force) and
    returns the op library's path."""
    cfg = _config()
    cflags, ldflags = _flags(cfg)
    stamp_path = os.path.join(os.path.dirname(_OBJ_DIR), "libblade_disc_tf.stamp")
    digest = _deps_hash(cfg, cflags, ldflags)
    if not force and all(os.path.exists(p) for p in library_paths()) and \
            os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if f.read().strip() == digest:
                return _OUT
    start = time.time()
    targets = _targets(cfg, cflags, ldflags)
    for _, units, _ in targets:
        for _, obj, _ in units:
            os.makedirs(os.path.dirname(obj), exist_ok=True)
    import tensorflow as tf  # its headers: covered by the flags
    skip = (os.path.join(os.path.realpath(tf.sysconfig.get_include()), ""),
            os.path.join(tf.sysconfig.get_include(), ""))
    # Longest units first (the kernels' Eigen contractions), so that the
    # cores stay busy to the end.
    order = sorted(((t, u) for t, (_, units, _) in enumerate(targets) for u in units),
                   key=lambda tu: (tu[1][0] not in cfg["kernel_sources"], tu[0]))
    jobs = max(1, os.cpu_count() or 2)
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = {pool.submit(_compile, os.path.join(_HERE, src), obj, flags, force, skip): t
                   for t, (src, obj, flags) in order}
        for f in futures:
            f.result()
    for out, units, link_flags in targets:
        _link(out, [obj for _, obj, _ in units], link_flags)
    with open(stamp_path, "w") as f:
        f.write(digest + "\n")
    if verbose:
        print("built %s and %d kernel libraries in %.1f s"
              % (_OUT, len(targets) - 1, time.time() - start))
    return _OUT


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--force", action="store_true", help="rebuild all")
    args = parser.parse_args()
    print(build(force=args.force))


if __name__ == "__main__":
    main()
