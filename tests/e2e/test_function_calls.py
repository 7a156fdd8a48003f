"""Function calls TF leaves in the graph (_noinline: every
tf.function(jit_compile=True), nested ones too) are inlined before
clustering when their bodies are compilable, so their ops share one cluster
with their neighbours: no call between clusters, one compile per rank
signature, TF's control-dependency order kept (variable reads see the
writes before the call, writes after it wait for its reads).  Calls whose
bodies are not compilable stay in TF and disc.explain names why."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import tf1_executed_ops, tf2_function_graphs, total
from shapes import random_f32, shapes_2d

SPEC_2D = tf.TensorSpec([None, None], tf.float32)
CALL_OPS = ("PartitionedCall", "StatefulPartitionedCall")


def _top_level_ops(call) -> list:
    """Op types of the top-level graphs TF executed on `call` (the first
    call of its functions): clusters show as DiscLaunch, calls left in TF
    as call ops."""
    return [n.op for g in tf2_function_graphs(call) for n in g.post_optimization_graph.node]


def _check_one_cluster(disc, f, reference, shapes, seed=0):
    ops = _top_level_ops(lambda: f(tf.constant(random_f32(shapes[0], seed))))
    assert ops.count("DiscLaunch") == 1 and not set(CALL_OPS) & set(ops), ops
    for i, shape in enumerate(shapes):
        x = random_f32(shape, seed + i)
        np.testing.assert_allclose(f(x).numpy(), reference(x), rtol=2e-5, atol=2e-5)
    stats = disc.stats()
    assert total(stats, "compiles") == 1 and total(stats, "fallbacks") == 0, stats


def test_noinline_call_joins_the_cluster(disc):
    @tf.function(jit_compile=True)
    def inner(x):
        return tf.tanh(x) * 2.0 + x

    @tf.function(input_signature=[SPEC_2D])
    def f(x):
        a = tf.exp(-x * x)
        return inner(a) - a

    def reference(x):
        a = np.exp(-x * x)
        return np.tanh(a) * 2.0 + a - a

    _check_one_cluster(disc, f, reference, shapes_2d(8))


def test_nested_noinline_calls_and_a_layer_whose_call_is_a_function(disc):
    @tf.function(experimental_attributes={"_noinline": True})
    def innermost(x):
        return tf.sigmoid(x) * x

    @tf.function(jit_compile=True)
    def middle(x):
        return innermost(x + 1.0) * 0.5

    class Layer(tf.Module):
        @tf.function(jit_compile=True)
        def __call__(self, x):
            return middle(x) - tf.square(x)

    layer = Layer()

    @tf.function(input_signature=[SPEC_2D])
    def f(x):
        return layer(tf.abs(x)) + x

    def reference(x):
        a = np.abs(x) + 1.0
        return a / (1.0 + np.exp(-a)) * 0.5 - np.abs(x) ** 2 + x

    _check_one_cluster(disc, f, reference, shapes_2d(8, seed=1), seed=7)
    ex = disc.explain(f)
    assert len(ex.clusters) == 1 and "function call" not in ex.reasons, str(ex)


def test_variable_reads_in_a_call_keep_their_order(disc):
    """The body's ReadVariableOp stays in TF, ordered after the assign
    before the call and before the assign_add after it (TF's control
    inputs and control outputs of the call)."""
    v = tf.Variable(tf.zeros([4]))

    @tf.function(jit_compile=True)
    def scale(x):
        return tf.tanh(x * v) + v

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
    def f(x):
        v.assign(tf.reduce_mean(x, 0))
        y = scale(x * 2.0) - x
        v.assign_add(tf.ones([4]))
        return y

    ops = _top_level_ops(lambda: f(tf.zeros([2, 4])))
    # The mean before the assign is a cluster of its own: the variable
    # write and read between them run in TF.
    assert ops.count("DiscLaunch") == 2 and not set(CALL_OPS) & set(ops), ops
    for i, rows in enumerate((3, 1, 7, 5, 2)):
        x = random_f32((rows, 4), 20 + i)
        mean = x.mean(0)
        want = np.tanh(2.0 * x * mean) + mean - x
        np.testing.assert_allclose(f(x).numpy(), want, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(v.numpy(), mean + 1.0, rtol=1e-6, atol=1e-6)
    stats = disc.stats()
    assert total(stats, "compiles") == 2 and total(stats, "fallbacks") == 0, stats


def _counting(**function_options):
    """f(x) = inner(tanh(x) + 1) - 3x, where inner (a tf.function with
    function_options) also counts its calls in a variable: a stateful body."""
    counter = tf.Variable(0.0)

    @tf.function(**function_options)
    def inner(x):
        counter.assign_add(1.0)
        return tf.exp(x) * 2.0

    @tf.function(input_signature=[SPEC_2D])
    def f(x):
        return inner(tf.tanh(x) + 1.0) - x * 3.0

    return f, counter


def _check_counting(f, counter, shapes):
    for i, shape in enumerate(shapes):
        x = random_f32(shape, 40 + i)
        want = np.exp(np.tanh(x) + 1.0) * 2.0 - x * 3.0
        np.testing.assert_allclose(f(x).numpy(), want, rtol=2e-5, atol=2e-5)
    assert counter.numpy() == len(shapes)


def test_call_with_a_stateful_body_stays_and_is_explained(disc):
    f, counter = _counting(jit_compile=True)
    ex = disc.explain(f)
    calls = [n for n in ex.not_clustered if n["op"] in CALL_OPS]
    assert len(calls) == 1, str(ex)
    reason = calls[0]["reason"]
    assert reason.startswith("function call: ") and "AssignAddVariableOp" in reason, reason
    _check_counting(f, counter, shapes_2d(5, seed=2))


def test_tf1_session_call_output_fetched_by_name(disc):
    @tf.function(jit_compile=True)
    def inner(x):
        return tf.nn.relu(x - 0.5) * 3.0

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, None], name="x")
        a = tf.exp(x) * 0.5
        y = inner(a)  # a call node: fetched below by its own name
        out = tf.identity(y + a, name="out")
    assert y.op.type in CALL_OPS
    with tf.compat.v1.Session(graph=graph) as session:
        feed = {x: random_f32((3, 4), 0)}
        ops = tf1_executed_ops(session, [out, y], feed)
        assert "DiscLaunch" in ops and not set(CALL_OPS) & set(ops), ops
        for i, shape in enumerate(shapes_2d(6, seed=4)):
            xv = random_f32(shape, 60 + i)
            got_out, got_y = session.run([out, y.name], {x: xv})
            a = np.exp(xv) * 0.5
            want_y = np.maximum(a - 0.5, 0.0) * 3.0
            np.testing.assert_allclose(got_y, want_y, rtol=2e-5, atol=2e-5)
            np.testing.assert_allclose(got_out, want_y + a, rtol=2e-5, atol=2e-5)
    stats = disc.stats()
    assert total(stats, "compiles") == 1 and total(stats, "fallbacks") == 0, stats


@pytest.mark.parametrize("attr", ["_noinline", None])
def test_explain_inlines_as_the_optimizer_does(disc, attr):
    attrs = {attr: True} if attr else None

    @tf.function(experimental_attributes=attrs)
    def inner(x):
        return tf.exp(x) + 1.0

    @tf.function(input_signature=[SPEC_2D])
    def f(x):
        return inner(x * 2.0) * x

    ex = disc.explain(f)
    assert len(ex.clusters) == 1 and ex.coverage == 1.0, str(ex)


def test_call_placed_on_another_device_stays(disc):
    @tf.function(jit_compile=True)
    def inner(x):
        return tf.exp(x) + 1.0

    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, None], name="x")
        a = x * 2.0
        with tf.device("/device:GPU:0"):
            y = inner(a)
        tf.identity(y * x - a, name="out")
    ex = disc.explain(graph)
    calls = [n for n in ex.not_clustered if n["op"] in CALL_OPS]
    assert [n["reason"] for n in calls] == ["function call: on device /device:GPU:0"], str(ex)


def test_explain_inlines_plain_calls_as_the_runtime_does(disc):
    """A traced graph still holds calls of plain tf.functions, which TF's
    runtime inlines before Grappler whatever their body: explain does the
    same, so the stateful op is named, not the call."""
    f, counter = _counting()
    ex = disc.explain(f)
    assert "function call" not in ex.reasons, str(ex)
    # Besides the assign, only the inliner's Identity of the variable handle.
    assert sorted(n["op"] for n in ex.not_clustered) == ["AssignAddVariableOp", "Identity"], \
        str(ex)
    _check_counting(f, counter, [(3, 5), (1, 2)])
