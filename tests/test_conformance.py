"""The BladeDISC TF op suite (../shared/disc_tf_ops), run through our plugin.

Every case whose ops are all in our registry must pass compiled (no fallback)
and match stock TF; cases with unsupported ops must still give TF's answer.
Skipped when the suite is not beside the checkout."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SUITE = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "disc_tf_ops")
HERE = os.path.dirname(os.path.abspath(__file__))

pytestmark = pytest.mark.skipif(not os.path.isfile(os.path.join(SUITE, "run.py")),
                                reason="../shared/disc_tf_ops is not present")


# The suite in two shards by case id, run at the same time (each mostly one
# Python thread between compiles): the test's time nearly halves on 2 cores.
SHARDS = ("^[a-m]", "^[^a-m]")


def _start(args, tmp, env=None):
    cmd = [sys.executable, os.path.join(SUITE, "run.py"), "--refs", str(tmp / "refs")] + args
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def _finish(proc):
    out, err = proc.communicate(timeout=3600)
    assert proc.returncode in (0, 1), err[-3000:]
    return out


def _shard(tmp, only):
    """Stock TF's references, then our plugin's run, of the cases `only` selects."""
    name = "a" if only == SHARDS[0] else "b"
    yield _start(["--mode", "tf", "--only", only, "--results", str(tmp / f"tf_{name}.json")], tmp)
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""),
               DISC_CACHE_DIR=str(tmp / f"cache_{name}"))
    yield _start(["--mode", "plugin", "--only", only, "--plugin-hook", "disc_conformance_hook",
                  "--results", str(tmp / f"plugin_{name}.json"), "--isolate",
                  "--case-timeout", "600"], tmp, env)


def _run_shards(tmp):
    """Runs the shards' steps, the shards side by side; (results, stdout)."""
    steps = [_shard(tmp, only) for only in SHARDS]
    outs = []
    for running in zip(*steps):     # both shards' tf runs, then both plugin runs
        outs += [_finish(p) for p in running]
    results = []
    for name in ("a", "b"):
        with open(tmp / f"plugin_{name}.json") as f:
            got = json.load(f)
        results += got["results"] if isinstance(got, dict) else got
    return results, "".join(outs)


@pytest.fixture(scope="module")
def conformance(tmp_path_factory):
    return _run_shards(tmp_path_factory.mktemp("conformance"))


# Measured: 431 of the 446 CPU cases pass compiled, the case's every compute op
# inside a DiscLaunch (the hook checks disc.stats()["optimizer"]["ops_left_in_tf"];
# before that check, 20 cases "passed" with their op left in TF beside a
# compiled Identity).  The 15 others give TF's answer from TF: Where (10),
# SparseFillEmptyRows (3) and SparseReshape (1) have data-dependent output
# shapes; one Sum/Abs case is int8, not one of our dtypes (DTYPE_CASES).
MIN_PASSED_COMPILED = 431
DTYPE_CASES = {"sum.TFSumOpTest.ColReduceFullyDynamicShape2DI8"}  # int8


def test_pass_count_threshold(conformance):
    results, _ = conformance
    cpu = [r for r in results if r["status"] != "SKIP"]
    passed = [r for r in cpu if r["status"] == "PASS"]
    assert len(cpu) == 446, len(cpu)
    assert len(passed) >= MIN_PASSED_COMPILED, "\n".join(
        f"{r['id']}: {r['reason']}" for r in cpu if r["status"] != "PASS")


def _supported_ops():
    from blade_disc_tf.compiler.registry import support_table
    return set(support_table()["ops"])


def test_every_fully_supported_case_passes_compiled(conformance):
    results, log = conformance
    supported = _supported_ops()
    failures = [f"{r['id']}: {r['reason']}" for r in results
                if r["status"] not in ("SKIP", "PASS") and r["ops"] and set(r["ops"]) <= supported
                and r["id"] not in DTYPE_CASES]
    assert not failures, "\n".join(failures)


def test_no_case_crashes_or_gives_a_wrong_answer(conformance):
    """A case we cannot compile may fail the 'compiled' check, never the numbers."""
    results, _ = conformance
    wrong = [f"{r['id']}: {r['reason']}" for r in results
             if r["status"] == "ERROR" or (r["status"] == "FAIL" and "output" in r["reason"])]
    assert not wrong, "\n".join(wrong)
