"""The product defaults, as a user gets them (`disc.enable()` and nothing
else, in a fresh process without the test suite's DISC_ASYNC_COMPILE=0 and
DISC_SELF_GUARD=0): compiles run in the background while calls run in TF,
disc.wait_for_compiles() waits for them, and every answer equals TF's."""
import os
import subprocess
import sys
import textwrap

from blade_disc_tf import config

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf
    import blade_disc_tf as disc

    disc.enable(cache_dir=sys.argv[1])
    opts = disc.options()
    assert opts.async_compile and opts.self_guard, opts

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def f(x):
        return tf.tanh(x * 2.0 + 1.0) * tf.sigmoid(x)

    rng = np.random.default_rng(0)
    worst = 0.0
    for i in range(30):
        x = rng.standard_normal((1 + i % 5, 3 + i)).astype(np.float32)
        worst = max(worst, float(np.max(np.abs(f(x).numpy() - f.python_function(x).numpy()))))
        if i == 0:
            first = dict(next(iter(disc.stats()["clusters"].values())))
            assert disc.wait_for_compiles(300)
    (c,) = disc.stats()["clusters"].values()
    print(json.dumps({"first": first, "last": c, "worst": worst}))
""")


def test_defaults_are_async_and_guarded():
    opts = config.from_environment({})
    assert opts.async_compile and opts.self_guard
    off = config.from_environment({"DISC_ASYNC_COMPILE": "0", "DISC_SELF_GUARD": "0"})
    assert not off.async_compile and not off.self_guard
    assert off.native_json(True)["self_guard"] is False


def test_first_call_runs_in_tf_while_compiling(tmp_path):
    import json

    env = {k: v for k, v in os.environ.items()
           if k not in ("DISC_ASYNC_COMPILE", "DISC_SELF_GUARD")}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    first, last = out["first"], out["last"]
    assert first["fallback_reasons"] == {"compiling": 1}, first
    assert last["compiles"] == 1 and last["runs"] == 30, last
    # After the wait every call ran compiled or, by the guard's choice, in TF.
    assert last["fallbacks"] == 1, last
    assert last["cache_hits"] + last["self_guard"]["tf_runs"] == 29, last
    assert out["worst"] < 1e-5, out
    (record,) = last["compile_log"]
    assert record["key"] in last["keys"] and record["compiled"], record
    assert record["calls_in_tf"] == first["fallback_reasons"]["compiling"] == 1, record
    assert abs(record["seconds"] - last["compile_seconds"]) < 1e-6, last


def test_compile_log_of_sync_compiles_and_disk_cache_hits(disc):
    """One record per compile: a sync compile ran no call in TF; after the
    in-memory cache is cleared the same key is a disk-cache hit."""
    import numpy as np
    import tensorflow as tf

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def f(x):
        return tf.exp(x) * 2.0 + 1.0

    x = np.arange(5, dtype=np.float32)
    f(x)
    disc.clear_executable_cache()
    f(x)
    (c,) = disc.stats()["clusters"].values()
    first, second = c["compile_log"]
    assert first["compiled"] and not second["compiled"], c
    assert first["key"] == second["key"] and first["key"] in c["keys"], c
    assert first["calls_in_tf"] == second["calls_in_tf"] == 0, c
    assert first["seconds"] > first["codegen_seconds"] > 0, c
    assert c["compiles"] == c["disk_cache_hits"] == 1, c
