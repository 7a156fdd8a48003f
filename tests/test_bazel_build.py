"""The Bazel build (//tf_disc:libblade_disc_tf.so) and the pip build
(tf_disc/build_ops.py) must compile the same sources with the same flags: both
read tf_disc/sources.json.  These tests ask Bazel itself (`bazel query`, no
build) what the target really uses.  Skipped where bazel is not installed."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = "//tf_disc:libblade_disc_tf.so"

pytestmark = [
    pytest.mark.skipif(shutil.which("bazel") is None, reason="bazel is not installed"),
    pytest.mark.skipif("TEST_SRCDIR" in os.environ, reason="already inside a bazel test"),
]


def _bazel(*args: str) -> str:
    proc = subprocess.run(["bazel", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"bazel {' '.join(args)} failed:\n{proc.stderr[-4000:]}"
    return proc.stdout


def _sources_json() -> dict:
    with open(os.path.join(ROOT, "tf_disc", "sources.json")) as f:
        return json.load(f)


def _attr(rule_text: str, name: str) -> list:
    """A list attribute of `bazel query --output=build` (a Python literal)."""
    start = rule_text.index(f"  {name} = [")
    end = rule_text.index("]", start)
    return eval(rule_text[rule_text.index("[", start):end + 1])  # noqa: S307 (bazel's output)


@pytest.fixture(scope="module")
def rule() -> str:
    return _bazel("query", "--output=build", TARGET)


def test_sources_are_sources_json():
    cfg = _sources_json()
    labels = _bazel("query", "--output=label", f"labels(srcs, {TARGET})").split()
    prefix = "//tf_disc:"
    assert all(label.startswith(prefix) for label in labels), labels
    srcs = [label[len(prefix):] for label in labels]
    compiled = sorted(s for s in srcs if not s.endswith(".h"))
    assert compiled == sorted(cfg["sources"])
    # Every header next to the sources is declared (Bazel's sandbox needs them).
    headers = sorted(s for s in srcs if s.endswith(".h"))
    on_disk = sorted(os.path.relpath(os.path.join(d, f), os.path.join(ROOT, "tf_disc"))
                     for d, _, files in os.walk(os.path.join(ROOT, "tf_disc"))
                     for f in files if f.endswith(".h") and d != os.path.join(ROOT, "tf_disc"))
    assert headers == on_disk


def test_flags_are_sources_json(rule):
    cfg = _sources_json()
    copts = _attr(rule, "copts")
    linkopts = _attr(rule, "linkopts")
    extra = cfg.get("extra_cflags", [])
    assert copts[len(copts) - len(extra):] == extra, copts
    for d in cfg.get("include_dirs", []):
        rel = os.path.relpath(os.path.normpath(os.path.join(ROOT, "tf_disc", d)), ROOT)
        assert "-I" + rel in copts, (d, copts)
    assert linkopts == cfg.get("extra_ldflags", [])
    for flag in ("-D_GLIBCXX_USE_CXX11_ABI=1", "-DEIGEN_MAX_ALIGN_BYTES=64", "-DNDEBUG"):
        assert flag in copts, (flag, copts)


def test_flags_match_build_ops(rule):
    """The pip build's compile flags (tf.sysconfig + sources.json), minus its
    -I paths (Bazel's headers library and -I. stand for them), are Bazel's."""
    sys.path.insert(0, os.path.join(ROOT, "tf_disc"))
    try:
        import build_ops
    finally:
        sys.path.pop(0)
    cflags, ldflags = build_ops._flags(build_ops._config())

    def defines_and_options(flags):  # in order, first occurrence
        out = []
        for f in flags:
            if not f.startswith("-I") and f not in out:
                out.append(f)
        return out

    assert defines_and_options(_attr(rule, "copts")) == defines_and_options(cflags)
    assert [f for f in ldflags if not f.startswith(("-L", "-l:libtensorflow"))] == \
        _attr(rule, "linkopts")
    deps = _bazel("query", "--output=label", f"labels(deps, {TARGET})").split()
    assert sorted(deps) == ["@local_config_tf//:tensorflow_framework",
                            "@local_config_tf//:tf_headers"]


@pytest.mark.parametrize("tier", sorted(_sources_json()["kernel_tiers"]))
def test_kernel_libraries_are_sources_json(tier):
    """Each per-ISA kernel library compiles sources.json's kernel sources with
    the op library's flags, then the kernel and tier flags."""
    cfg = _sources_json()
    target = f"//tf_disc:libblade_disc_tf_kernels_{tier}.so"
    labels = _bazel("query", "--output=label", f"labels(srcs, {target})").split()
    compiled = sorted(label.split(":", 1)[1] for label in labels if not label.endswith(".h"))
    assert compiled == sorted(cfg["kernel_sources"])
    rule_text = _bazel("query", "--output=build", target)
    copts = _attr(rule_text, "copts")
    tail = cfg["extra_cflags"] + cfg["kernel_cflags"] + cfg["kernel_tiers"][tier]
    assert copts[len(copts) - len(tail):] == tail, copts
    assert _attr(rule_text, "linkopts")[:len(cfg["kernel_ldflags"])] == cfg["kernel_ldflags"]
