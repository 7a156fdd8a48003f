"""Run as a script: `python mirrored_script.py N CACHE_DIR`.  Splits the CPU
into N logical devices, runs a MirroredStrategy step (per-replica math, an
all-reduce, per-replica math again) over several batch shapes under
blade_disc_tf and in stock TF, and prints one JSON line with the results'
largest difference, the op types TF executed and blade_disc_tf's stats."""
from __future__ import annotations

import json
import os
import sys
from collections import Counter

import numpy as np
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from graph_inspection import tf2_executed_ops  # noqa: E402

SHAPES = [(3, 5), (7, 5), (1, 9), (0, 4), (16, 33)]


def make_step(strategy, w):
    """A fresh tf.function (so it is optimized with the current settings)."""
    def replica_fn(x):
        ctx = tf.distribute.get_replica_context()
        xr = x * (1.0 + tf.cast(ctx.replica_id_in_sync_group, tf.float32))
        h = tf.tanh(xr) * w + tf.abs(xr)                  # clustered per replica
        s = tf.reduce_sum(h * h, axis=-1)
        total = ctx.all_reduce(tf.distribute.ReduceOp.SUM, s)   # stays in TF
        return tf.exp(-tf.abs(total)) * s + tf.sqrt(total) * 0.5

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def step(x):
        return strategy.experimental_local_results(strategy.run(replica_fn, args=(x,)))
    return step


def main(n: int, cache_dir: str) -> None:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * n)
    import blade_disc_tf as disc
    disc.enable(cache_dir=cache_dir, min_cluster_size=2, async_compile=False)
    strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(n)])
    with strategy.scope():
        w = tf.Variable(0.75)
    rng = np.random.default_rng(n)
    xs = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    step = make_step(strategy, w)
    ops = Counter(tf2_executed_ops(lambda: step(xs[0])))
    ours = [[t.numpy() for t in step(x)] for x in xs]
    stats = disc.stats()
    disc.disable()
    stock_step = make_step(strategy, w)
    stock = [[t.numpy() for t in stock_step(x)] for x in xs]
    diff = max(float(np.max(np.abs(a - b) / (1 + np.abs(b)), initial=0.0))
               for o, s in zip(ours, stock) for a, b in zip(o, s))
    shapes_ok = all(a.shape == b.shape for o, s in zip(ours, stock) for a, b in zip(o, s))
    print(json.dumps({"diff": diff, "shapes_ok": shapes_ok, "replicas": len(ours[0]),
                      "calls": 1 + len(xs),
                      "ops": ops, "stats": stats}))


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
