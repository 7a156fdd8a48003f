"""DynamicStitch with run-time indices (a permutation split in two) and the
DynamicPartition gradient (ParallelDynamicStitch): ours (compiled) vs stock TF
in one process, interleaved, medians.  python benchmarks/dynamic_stitch_vs_tf.py"""
import os, time, statistics
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np, tensorflow as tf, blade_disc_tf as disc

def body(i, j, x, y):
    return tf.dynamic_stitch([i, j], [x, y]) * 2.0 + 1.0

def grad_body(x, parts):
    with tf.GradientTape() as tape:
        tape.watch(x)
        a, b, c = tf.dynamic_partition(tf.tanh(x), parts, 3)
        loss = tf.reduce_sum(a * 2.0) + tf.reduce_sum(b * b) + tf.reduce_sum(c)
    return tape.gradient(loss, x)

sig = [tf.TensorSpec([None], tf.int32)] * 2 + [tf.TensorSpec([None, None])] * 2
gsig = [tf.TensorSpec([None, None]), tf.TensorSpec([None], tf.int32)]
disc.enable(min_cluster_size=1)
ours, gours = tf.function(body, input_signature=sig), tf.function(grad_body, input_signature=gsig)
rng = np.random.default_rng(0)
cases = []
for n, k in [(1000, 64), (100000, 64), (20000, 512), (200000, 8)]:
    perm = rng.permutation(n).astype(np.int32)
    i, j = perm[: n // 2], perm[n // 2:]
    x = tf.constant(rng.standard_normal((len(i), k)), tf.float32)
    y = tf.constant(rng.standard_normal((len(j), k)), tf.float32)
    cases.append(("stitch %dx%d" % (n, k), (tf.constant(i), tf.constant(j), x, y), ours, body))
    xg = tf.constant(rng.standard_normal((n, k)), tf.float32)
    pg = tf.constant(rng.integers(0, 3, n).astype(np.int32))
    cases.append(("partition-grad %dx%d" % (n, k), (xg, pg), gours, grad_body))
for _, args, f, _ in cases:
    f(*args)
disc.disable()
stock = {id(b): tf.function(b, input_signature=sig if b is body else gsig) for b in (body, grad_body)}
for name, args, f, b in cases:
    s = stock[id(b)]
    np.testing.assert_allclose(f(*args).numpy(), s(*args).numpy(), rtol=1e-5, atol=1e-5)
    to, ts = [], []
    reps = 30 if "1000x" in name else 9
    for _ in range(reps):
        t0 = time.perf_counter(); f(*args).numpy(); to.append(time.perf_counter() - t0)
        t0 = time.perf_counter(); s(*args).numpy(); ts.append(time.perf_counter() - t0)
    mo, ms = statistics.median(to), statistics.median(ts)
    print(f"{name:28s} ours {mo*1e3:8.3f} ms  tf {ms*1e3:8.3f} ms  ours/tf {mo/ms:5.2f}")
st = disc.stats()["clusters"]
print("fallbacks", sum(c["fallbacks"] for c in st.values()), "compiles", [c["compiles"] for c in st.values()])
