"""build_ops' per-unit staleness: a header change rebuilds only the units
whose g++ depfile lists it (not every unit, as a hash of all headers did)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
from tf_disc import build_ops  # noqa: E402


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def test_header_change_rebuilds_only_its_dependents(tmp_path):
    d = str(tmp_path)
    _write(os.path.join(d, "a.h"), "inline int a() { return 1; }\n")
    _write(os.path.join(d, "b.h"), "inline int b() { return 2; }\n")
    _write(os.path.join(d, "x.cc"), '#include "a.h"\nint x() { return a(); }\n')
    _write(os.path.join(d, "y.cc"), '#include "b.h"\nint y() { return b(); }\n')
    flags = ["-I" + d, "-O0"]

    def build_all():
        """Compiles both units; returns the set rebuilt (a new object inode)."""
        before = {u: os.stat(os.path.join(d, u + ".o")).st_ino
                  for u in "xy" if os.path.exists(os.path.join(d, u + ".o"))}
        for u in "xy":
            build_ops._compile(os.path.join(d, u + ".cc"), os.path.join(d, u + ".o"),
                               flags, force=False)
        return {u for u in "xy" if before.get(u) != os.stat(os.path.join(d, u + ".o")).st_ino}

    assert build_all() == {"x", "y"}
    assert build_all() == set()
    _write(os.path.join(d, "b.h"), "inline int b() { return 3; }\n")
    assert build_all() == {"y"}
    _write(os.path.join(d, "x.cc"), '#include "a.h"\nint x() { return a() + 1; }\n')
    assert build_all() == {"x"}
    flags.append("-DCHANGED")
    assert build_all() == {"x", "y"}
    os.remove(os.path.join(d, "y.o.d"))  # no depfile: rebuilt
    assert build_all() == {"y"}


def test_library_digest_covers_headers_at_any_depth(tmp_path, monkeypatch):
    """The whole-library stamp (build()'s first check) changes when any
    header under tf_disc changes, however deep (runtime/cpu/prelude/ is two
    folders down): otherwise a header edit would leave the library stale."""
    import glob
    import shutil

    root = str(tmp_path / "tf_disc")
    shutil.copytree(os.path.dirname(build_ops.__file__), root,
                    ignore=shutil.ignore_patterns("*.so", "*.o", "__pycache__", "*.py"))
    monkeypatch.setattr(build_ops, "_HERE", root)
    cfg = build_ops._config()
    deep = sorted(glob.glob(os.path.join(root, "*", "*", "*", "*.h")))
    assert deep, "no header three folders down"
    before = build_ops._deps_hash(cfg, [], [])
    for path in (deep[0], os.path.join(root, "runtime", "disc_abi.h")):
        with open(path, "a") as f:
            f.write("\n// edited\n")
        after = build_ops._deps_hash(cfg, [], [])
        assert after != before, path
        before = after


def test_source_edited_during_its_compile_gets_no_stamp(tmp_path, monkeypatch):
    """A unit whose source changes while g++ runs is compiled again by the
    next build (its object may hold the old text), not stamped up to date."""
    d = str(tmp_path)
    src, obj = os.path.join(d, "z.cc"), os.path.join(d, "z.o")
    _write(src, "int z() { return 1; }\n")
    real_run = build_ops.subprocess.run

    def run_then_edit(*args, **kwargs):
        proc = real_run(*args, **kwargs)
        _write(src, "int z() { return 2; }\n")  # the edit lands mid-compile
        return proc

    monkeypatch.setattr(build_ops.subprocess, "run", run_then_edit)
    build_ops._compile(src, obj, ["-O0"], force=False)
    assert not os.path.exists(obj + ".stamp")
    monkeypatch.setattr(build_ops.subprocess, "run", real_run)
    first = os.stat(obj).st_ino
    build_ops._compile(src, obj, ["-O0"], force=False)
    assert os.stat(obj).st_ino != first and os.path.exists(obj + ".stamp")
