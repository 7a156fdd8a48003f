"""Runs pytest files as a Bazel py_test (tests/BUILD), against the Bazel-built op
library: DISC_OP_LIBRARY is set from runfiles before blade_disc_tf loads it.

    bazel_pytest_main.py [pytest args...] tests/e2e/test_tf2_function.py ...

Paths are workspace-relative; they are resolved through runfiles.  The
`blade_disc_tf` Python package itself is the source tree (pip install -e .)."""
from __future__ import annotations

import os
import sys

LIBRARY = "blade_disc_tf/tf_disc/libblade_disc_tf.so"
WORKSPACE = "blade_disc_tf"


def _runfiles():
    try:
        from runfiles import runfiles  # bazel-runfiles >= 0.24 (pip)
    except ImportError:
        from python.runfiles import runfiles  # older bazel-runfiles
    r = runfiles.Create()
    if r is None:
        raise SystemExit("bazel_pytest_main: no runfiles (run it with bazel test)")
    return r


def _clean_sys_path(r):
    """Bazel's python stub puts the runfiles root on sys.path, whose
    `blade_disc_tf/` (this workspace) would shadow the editable package as a
    namespace package: keep runfiles dirs off sys.path; pytest adds what the
    test files need (their rootdir-relative conftest/helper directories)."""
    root = os.environ.get("RUNFILES_DIR") or os.environ.get("TEST_SRCDIR") or ""
    if not root:
        return
    root = os.path.realpath(root)
    sys.path[:] = [p for p in sys.path
                   if p and not (os.path.realpath(p) + os.sep).startswith(root + os.sep)]


def main(argv):
    r = _runfiles()
    lib = r.Rlocation(LIBRARY)
    if not lib or not os.path.exists(lib):
        raise SystemExit(f"bazel_pytest_main: {LIBRARY} not in runfiles")
    os.environ["DISC_OP_LIBRARY"] = os.path.realpath(lib)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.dont_write_bytecode = True  # runfiles are read-only symlinks

    args = []
    for a in argv:
        if a.startswith("tests/") and a.endswith(".py"):
            path = r.Rlocation(f"{WORKSPACE}/{a}")
            if not path or not os.path.exists(path):
                raise SystemExit(f"bazel_pytest_main: {a} not in runfiles")
            a = path
        args.append(a)
    _clean_sys_path(r)

    import pytest

    # The workspace copy in runfiles is the rootdir (tests/conftest.py etc.);
    # no cache dir: runfiles are read-only.
    root = os.path.join(os.environ.get("TEST_SRCDIR", ""), WORKSPACE)
    out = os.environ.get("XML_OUTPUT_FILE")
    extra = ["-q", "-p", "no:cacheprovider", "--rootdir", root]
    if out:
        extra += ["--junitxml", out]
    rc = pytest.main(extra + args)

    # The tests must have run on the Bazel-built library, not another copy.
    from blade_disc_tf import _library

    loaded = _library._loaded
    if loaded is not None:
        print(f"bazel_pytest_main: op library {loaded.path}")
        if os.path.realpath(loaded.path) != os.environ["DISC_OP_LIBRARY"]:
            print(f"bazel_pytest_main: expected {os.environ['DISC_OP_LIBRARY']}")
            return rc or 1
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
