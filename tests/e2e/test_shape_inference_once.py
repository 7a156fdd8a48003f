"""The optimizer runs Grappler's shape inference once per graph: the static
facts (GatherNd index depth, Squeeze without axes) and the cluster inputs'
static dims share one pass over the graph (GraphAnalysis::InferredDims).
Counted from the optimizer's VLOG(2) line in a child process."""
import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import numpy as np, tensorflow as tf, blade_disc_tf as disc
    disc.enable(cache_dir=%r)

    @tf.function(input_signature=[tf.TensorSpec([None, 3, 4], tf.float32),
                                  tf.TensorSpec([None, 2], tf.int32),
                                  tf.TensorSpec([2, 1, 3], tf.float32)])
    def f(x, idx, s):
        g = tf.gather_nd(tf.tanh(x) * 2.0, idx)       # index depth 2: static
        return g + tf.reduce_sum(tf.squeeze(s) * 3.0)  # Squeeze without axes
    x = np.random.default_rng(0).standard_normal([5, 3, 4]).astype(np.float32)
    idx = np.array([[0, 1], [4, 2], [3, 0]], np.int32)
    s = np.ones([2, 1, 3], np.float32)
    got = f(x, idx, s).numpy()
    want = tf.gather_nd(np.tanh(x) * 2.0, idx) + 18.0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    st = disc.stats()
    assert sum(c["fallbacks"] for c in st["clusters"].values()) == 0, st
    print("GRAPHS_REWRITTEN", st["optimizer"]["graphs_rewritten"])
""")


def test_one_shape_inference_per_graph(tmp_path):
    env = dict(os.environ, TF_CPP_MAX_VLOG_LEVEL="2", TF_CPP_MIN_LOG_LEVEL="0")
    done = subprocess.run([sys.executable, "-c", CHILD % str(tmp_path / "cache")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = done.stderr.count("DiscOptimizer: shape inference over")
    rewritten = int(done.stdout.split("GRAPHS_REWRITTEN")[1].split()[0])
    # One run per rewritten graph (it needed the facts and the static dims);
    # before, a graph with GatherNd/Squeeze paid for two.
    assert rewritten >= 1 and runs == rewritten, (runs, rewritten)
