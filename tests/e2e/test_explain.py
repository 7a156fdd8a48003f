"""disc.explain(): reasons come from the optimizer's own decision (the op
library's DiscExplainGraph), one graph holding one op per reason."""
import numpy as np
import pytest
import tensorflow as tf

v1 = tf.compat.v1


def _graph_with_every_reason():
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None, None], name="x")
        p = v1.placeholder(tf.bool, [], name="p")
        a = tf.raw_ops.AddV2(x=tf.exp(x, name="exp"), y=x, name="add")  # one cluster
        tf.raw_ops.Cumprod(x=a, axis=0, name="cumprod")                 # unsupported op
        tf.raw_ops.Cast(x=a, DstT=tf.int32, Truncate=True, name="cast_trunc")  # attr
        tf.raw_ops.RandomUniform(shape=[2], dtype=tf.float32, name="random")  # stateful
        with tf.device("/device:GPU:0"):
            tf.raw_ops.Abs(x=a, name="abs_gpu")                          # device
        _, on_true = tf.raw_ops.Switch(data=a, pred=p, name="switch")
        scaled = tf.raw_ops.Mul(x=on_true, y=tf.constant(2.0), name="mul_branch")  # frame
        tf.raw_ops.Merge(inputs=[scaled, x], name="merge")
        cp = tf.raw_ops.Cumprod(x=x, axis=1, name="cumprod2")
        tf.raw_ops.Neg(x=cp, name="lonely_neg")                           # min size
        tf.raw_ops.Squeeze(input=x, name="squeeze_all")                   # shape
    return g


def test_one_op_of_each_reason(disc):
    ex = disc.explain(_graph_with_every_reason(), min_cluster_size=2)
    assert ex.reasons == {
        "unsupported op": ["cumprod", "cumprod2"],
        "unsupported dtype/attr": ["cast_trunc"],
        "stateful/resource": ["random"],
        "device": ["abs_gpu"],
        "control-flow frame": ["switch", "mul_branch", "merge"],
        "cluster below min size": ["lonely_neg"],
        "undecidable shape": ["squeeze_all"],
    }
    assert ex.clusters == [["exp", "add"]]
    # A Switch/Merge pair TF cannot turn into an If (legacy_frames.h) stays
    # with TF's reason; 12 compute nodes (Consts are data), 2 clustered.
    names = {n["name"]: n for n in ex.not_clustered}
    assert names["switch"]["reason"].startswith(
        "control-flow frame: TF cannot functionalize it: Merge node merge has input that's "
        "not in any CondContext.")
    # The refused attr is named with its value.
    assert names["cast_trunc"]["reason"] == "unsupported dtype/attr: Cast with Truncate=true"
    assert ex.compute_ops == 12 and ex.coverage == pytest.approx(2 / 12)
    assert ex.cluster_coverage() == [pytest.approx(2 / 12)]
    d = ex.to_dict()
    assert d["clusters"][0]["nodes"] == ["exp", "add"] and "lonely_neg" in str(ex)


def _gpu_graph():
    g = tf.Graph()
    with g.as_default():
        x = v1.placeholder(tf.float32, [None, None], name="x")
        with tf.device("/device:GPU:0"):
            a = tf.raw_ops.AddV2(x=tf.exp(x, name="exp"), y=x, name="add")
            tf.raw_ops.Cumsum(x=a, axis=0, name="cumsum")
        tf.raw_ops.Neg(x=tf.raw_ops.Abs(x=x, name="abs"), name="neg")
    return g


def test_gpu_nodes_cluster_only_with_the_gpu_option(disc):
    off = disc.explain(_gpu_graph(), min_cluster_size=2)
    assert off.reasons["device"] == ["exp", "add", "cumsum"], str(off)
    assert off.clusters == [["abs", "neg"]]
    disc.set_options(device="gpu")
    on = disc.explain(_gpu_graph(), min_cluster_size=2)
    # Clusters never mix devices; the CPU one is unchanged.
    assert sorted(on.clusters) == [["abs", "neg"], ["exp", "add"]], str(on)
    assert "device" not in on.reasons


def test_min_cluster_size_one_takes_the_lonely_op(disc):
    ex = disc.explain(_graph_with_every_reason(), min_cluster_size=1)
    assert "cluster below min size" not in ex.reasons
    assert ["lonely_neg"] in ex.clusters


def test_tf_function_with_signature_and_args(disc):
    @tf.function(input_signature=[tf.TensorSpec([None, 1], tf.float32)])
    def f(x):
        return tf.nn.relu(tf.squeeze(x) * 2.0) + tf.math.cumprod(x[:, 0])

    ex = disc.explain(f)
    assert ex.reasons == {"unsupported op": ["Cumprod"], "undecidable shape": ["Squeeze"]}

    def g(x):
        return tf.nn.relu(tf.squeeze(x) * 2.0)
    # Static dims decide the Squeeze: the optimizer makes its dims explicit.
    ex = disc.explain(tf.function(g), tf.TensorSpec([4, 1], tf.float32))
    assert ex.not_clustered == [] and ex.coverage == 1.0
    conc = tf.function(g).get_concrete_function(tf.TensorSpec([None, 3], tf.float32))
    assert disc.explain(conc).reasons == {"undecidable shape": ["Squeeze"]}
    assert disc.explain(conc.graph.as_graph_def()).reasons == \
        {"undecidable shape": ["Squeeze"]}


def test_decided_squeeze_runs_compiled(disc):
    """A Squeeze without axes on static dims is clustered and matches TF."""
    @tf.function(input_signature=[tf.TensorSpec([3, 1, 4], tf.float32)])
    def f(x):
        return tf.exp(tf.squeeze(x)) * 2.0

    x = np.random.default_rng(0).standard_normal((3, 1, 4)).astype(np.float32)
    np.testing.assert_allclose(f(x), np.exp(np.squeeze(x)) * 2.0, rtol=1e-6)
    clusters = disc.stats()["clusters"]
    assert sum(c["runs"] for c in clusters.values()) == 1
    assert sum(c["fallbacks"] for c in clusters.values()) == 0


def test_bad_input_is_a_type_error(disc):
    with pytest.raises(TypeError, match="explain"):
        disc.explain(42)


def test_stats_count_the_ops_left_in_tf(disc):
    """At run time the optimizer counts the compute ops it left outside
    clusters, by op type (what the conformance hook checks)."""
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def f(x):
        return tf.math.cumprod(tf.exp(x) + x, axis=0) * 2.0

    f(np.ones((2, 3), np.float32))
    # Exactly one: Grappler's meta optimizer runs us over the same graph more
    # than once, and a later pass replaces the graph's count, not adds to it.
    left = disc.stats()["optimizer"]["ops_left_in_tf"]
    assert left == {"Cumprod": 1}, left
    f(np.ones((4, 5), np.float32))  # same trace: no new optimization
    assert disc.stats()["optimizer"]["ops_left_in_tf"] == {"Cumprod": 1}
    disc.reset_stats()
    assert disc.stats()["optimizer"]["ops_left_in_tf"] == {}
