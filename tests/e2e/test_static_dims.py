"""Static dims of cluster inputs: dims Grappler's shape inference proves
(weights, channels) are compiled as constants, the rest stay symbols; the
executable checks the recorded dims at run time, so a wrong record gives
TF's InvalidArgument error, never wrong results or a crash."""
import glob

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.framework import graph_pb2

SHAPES = [(1, 5, 6), (2, 9, 4), (3, 3, 3), (1, 17, 11), (4, 8, 13), (2, 3, 30)]


def test_weight_dims_are_constants_batch_and_size_stay_symbols(disc, tmp_path):
    rng = np.random.default_rng(0)
    w1 = tf.Variable(rng.standard_normal([3, 3, 3, 8]).astype(np.float32))
    w2 = tf.Variable(rng.standard_normal([1, 1, 8, 8]).astype(np.float32))
    bias = tf.Variable(rng.standard_normal([8]).astype(np.float32))

    def model(x):
        y = tf.nn.relu(tf.nn.conv2d(x, w1, 1, "VALID") + bias)
        return y + tf.nn.conv2d(y, w2, 1, "VALID") * 0.5

    dump = tmp_path / "dump"
    disc.enable(dump_dir=str(dump))
    try:
        f = tf.function(model, input_signature=[tf.TensorSpec([None, None, None, 3])])
        for b, h, w in SHAPES:
            x = tf.constant(rng.standard_normal([b, h, w, 3]).astype(np.float32))
            np.testing.assert_allclose(f(x).numpy(), model(x).numpy(), rtol=1e-4, atol=1e-4)
    finally:
        disc.enable(dump_dir=None)
    clusters = disc.stats()["clusters"]
    assert len(clusters) == 1, clusters
    (c,) = clusters.values()
    assert c["compiles"] == 1 and c["fallbacks"] == 0 and c["runs"] == len(SHAPES), c
    (ir,) = glob.glob(str(dump / "disc_cluster_*" / "*" / "ir_00_input.mlir"))
    head = open(ir).readline()
    # Image: batch/height/width symbols, channels 3; weights fully static.
    assert "f32[s0,s1,s2,3]" in head and "f32[3,3,3,8]" in head, head
    assert "f32[1,1,8,8]" in head and "f32[8]" in head, head


def _launch_graph(static_dims: list) -> tuple[graph_pb2.GraphDef, str]:
    """A GraphDef calling x * y + x through a hand-made DiscLaunch whose
    function records `static_dims` for x (as the optimizer would)."""
    @tf.function(input_signature=[tf.TensorSpec([None, None])] * 2)
    def body(x, y):
        return x * y + x

    fdef = body.get_concrete_function().function_def
    fdef.signature.name = "disc_static_dims_test_" + "_".join(
        str(d).replace("-", "m") for d in static_dims)
    fdef.arg_attr[0].attr["_disc_static_dims"].list.i.extend(static_dims)
    g = graph_pb2.GraphDef()
    g.library.function.add().CopyFrom(fdef)
    for name in ("x", "y"):
        p = g.node.add(name=name, op="Placeholder")
        p.attr["dtype"].type = tf.float32.as_datatype_enum
    launch = g.node.add(name="launch", op="DiscLaunch", input=["x", "y"])
    launch.attr["Targs"].list.type.extend([tf.float32.as_datatype_enum] * 2)
    launch.attr["Tresults"].list.type.append(tf.float32.as_datatype_enum)
    launch.attr["f"].func.name = fdef.signature.name
    launch.attr["const_args"].list.i.extend([])
    return g, fdef.signature.name


@pytest.mark.parametrize("static,bad", [([-1, 3], (2, 4)), ([5, -1], (4, 3))])
def test_wrong_recorded_dims_give_invalid_argument(disc, static, bad):
    g, name = _launch_graph(static)
    rng = np.random.default_rng(1)
    good = tuple(d if d >= 0 else 7 for d in static)
    with tf.Graph().as_default() as graph:
        tf.compat.v1.import_graph_def(g, name="")
        out = graph.get_tensor_by_name("launch:0")
        with tf.compat.v1.Session(graph=graph) as sess:
            x0, y0 = (rng.standard_normal(good).astype(np.float32) for _ in range(2))
            got = sess.run(out, {"x:0": x0, "y:0": y0})
            np.testing.assert_allclose(got, x0 * y0 + x0, rtol=1e-6)
            x1, y1 = (rng.standard_normal(bad).astype(np.float32) for _ in range(2))
            with pytest.raises(tf.errors.InvalidArgumentError) as e:
                sess.run(out, {"x:0": x1, "y:0": y1})
    msg = str(e.value)
    assert f"DiscLaunch {name}: input 0 has shape [{bad[0]},{bad[1]}]" in msg, msg
    want = ",".join(str(d) for d in static)
    assert f"compiled for shape [{want}]" in msg, msg
    (c,) = [v for k, v in disc.stats()["clusters"].items() if k == name]
    assert c["compiles"] == 1, c


def test_clusters_differing_only_in_static_dims_do_not_share(disc):
    rng = np.random.default_rng(2)

    def run(n):
        w = tf.Variable(rng.standard_normal([n, 4]).astype(np.float32))
        b = tf.Variable(rng.standard_normal([4]).astype(np.float32))
        f = tf.function(lambda x: tf.nn.relu(tf.matmul(x, w) + b) * 2.0,
                        input_signature=[tf.TensorSpec([None, None])])
        x = tf.constant(rng.standard_normal([3, n]).astype(np.float32))
        np.testing.assert_allclose(f(x).numpy(), (tf.nn.relu(x @ w + b) * 2.0).numpy(),
                                   rtol=1e-5, atol=1e-5)

    run(5)
    run(6)
    clusters = disc.stats()["clusters"]
    assert len(clusters) == 2, clusters
    assert all(c["compiles"] == 1 and c["fallbacks"] == 0 for c in clusters.values()), clusters
