"""A second Python process reuses the disk cache: zero compiles."""
import json
import os
import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf
    import blade_disc_tf as disc
    disc.enable(cache_dir=sys.argv[1])
    f = tf.function(lambda x: tf.exp(-x * x) * 3.0 + x,
                    input_signature=[tf.TensorSpec([None, None], tf.float32)])
    for shape in [(2, 3), (7, 1), (0, 5)]:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(f(x).numpy(), np.exp(-x * x) * 3.0 + x, rtol=1e-5)
    print("STATS " + json.dumps(disc.stats()))
""")


def _run(cache_dir, extra_env=None):
    env = dict(os.environ, **(extra_env or {}))
    done = subprocess.run([sys.executable, "-c", _SCRIPT, cache_dir], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = [l for l in done.stdout.splitlines() if l.startswith("STATS ")][-1]
    clusters = json.loads(line[len("STATS "):])["clusters"].values()
    return {k: sum(c[k] for c in clusters) for k in ("compiles", "disk_cache_hits", "fallbacks")}


def test_second_process_compiles_nothing(tmp_path):
    cache = str(tmp_path / "cache")
    first = _run(cache)
    assert first == {"compiles": 1, "disk_cache_hits": 0, "fallbacks": 0}, first
    # The second process may not run the system compiler at all.
    second = _run(cache, {"DISC_FORBID_COMPILE": "1"})
    assert second == {"compiles": 0, "disk_cache_hits": 1, "fallbacks": 0}, second
