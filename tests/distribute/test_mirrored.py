"""tf.distribute (issue 5): MirroredStrategy over 2-4 logical CPU devices.
The all-reduce stays in TF, the math around it is clustered per replica, the
results equal stock TF, and each cluster compiles once per rank signature
over five batch shapes.  Each case runs in its own process (logical devices
are fixed before TF initializes)."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("replicas", [2, 4])
def test_mirrored_strategy_clusters_per_replica(tmp_path, replicas):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, os.path.join(HERE, "mirrored_script.py"),
                           str(replicas), str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["replicas"] == replicas and out["shapes_ok"], out
    assert out["diff"] < 1e-5, out["diff"]
    ops = out["ops"]
    # all-reduces run by TF, one per replica (counted in the optimized graph
    # and again in the device partitions); clusters before and after them
    assert ops.get("CollectiveReduceV2", 0) == 2 * replicas, ops
    assert ops.get("DiscLaunch", 0) >= 2 * 2 * replicas, ops
    clusters = out["stats"]["clusters"]
    ran = [c for c in clusters.values() if c["runs"]]
    assert len(ran) >= 2 * replicas, clusters
    for c in clusters.values():   # 5 shapes, one rank signature: one compile
        assert c["fallbacks"] == 0, c["fallback_reasons"]
        assert c["compiles"] + c["disk_cache_hits"] == len(c["keys"]) == 1, c
        assert c["runs"] == out["calls"], c
