"""TF1 legacy control flow (issue 24): graphs built with control flow v1
(tf.compat.v1.disable_control_flow_v2(), as TF1 and its frozen graphs have
them) hold tf.while_loop as Enter/Merge/Switch/NextIteration/Exit/LoopCond
frames and tf.cond as Switch/Merge.  The optimizer functionalizes the
compilable ones into While/If (TF's own FunctionalizeControlFlow), which then
compile whole: each graph below is one DiscLaunch, compiled once, no fallback,
against stock TF in a TF1 Session over 20 shapes (0- and 1-sized dims
included).  A loop with a stateful op stays in TF as it was, explained."""
from __future__ import annotations

import contextlib

import numpy as np
import tensorflow as tf

from graph_inspection import tf1_executed_ops, total

F = tf.float32
SHAPES = [(2, 3), (0, 3), (1, 1), (3, 0), (1, 7), (5, 1), (4, 4), (0, 0), (7, 2), (1, 0),
          (2, 9), (6, 5), (3, 3), (8, 1), (1, 2), (9, 4), (2, 2), (0, 1), (4, 6), (10, 3)]
FRAME_OPS = {"Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond"}
FUNCTIONAL = {"While", "StatelessWhile", "If", "StatelessIf"}


@contextlib.contextmanager
def _legacy_control_flow():
    tf.compat.v1.disable_control_flow_v2()
    try:
        yield
    finally:
        tf.compat.v1.enable_control_flow_v2()


def _graph(build):
    """(graph, x, n, out) with build(x, n) -> out under control flow v1;
    x: a [None, None] float, n: an int32 scalar (a trip count)."""
    graph = tf.Graph()
    with graph.as_default(), _legacy_control_flow():
        x = tf.compat.v1.placeholder(F, [None, None], name="x")
        n = tf.compat.v1.placeholder(tf.int32, [], name="n")
        out = tf.identity(build(x, n), name="out")
    assert {op.type for op in graph.get_operations()} & {"Enter", "Switch"}
    return graph, x, n, out


def _feeds(seed: int = 0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s).astype(np.float32), int(k % 5)) for k, s in enumerate(SHAPES)]


def _stock_results(disc, graph, x, n, out, feeds) -> list:
    """out for every feed, run by stock TF (blade_disc_tf disabled)."""
    disc.disable()
    try:
        with tf.compat.v1.Session(graph=graph) as session:
            assert "DiscLaunch" not in tf1_executed_ops(session, out, {x: feeds[0][0],
                                                                     n: feeds[0][1]})
            return [session.run(out, {x: xv, n: nv}) for xv, nv in feeds]
    finally:
        disc.enable()


def _assert_one_launch_compiled_once(disc, graph, x, n, out, seed: int = 0) -> None:
    """graph runs as one DiscLaunch (no frame op, no While/If left), matches
    stock TF on every feed, compiled once with no fallback."""
    feeds = _feeds(seed)
    expected = _stock_results(disc, graph, x, n, out, feeds)
    disc.reset_stats()
    with tf.compat.v1.Session(graph=graph) as session:
        ops = tf1_executed_ops(session, out, {x: feeds[0][0], n: feeds[0][1]})
        assert ops.count("DiscLaunch") == 1, ops
        assert not set(ops) & (FRAME_OPS | FUNCTIONAL), ops
        for (xv, nv), want in zip(feeds, expected):
            np.testing.assert_allclose(session.run(out, {x: xv, n: nv}), want,
                                       rtol=1e-5, atol=1e-5)
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats
    # (While/If may be counted: Grappler also optimizes the produced loop
    # bodies as functions of their own, which the executable does not call.)
    for op in FRAME_OPS:
        assert stats["optimizer"]["ops_left_in_tf"].get(op, 0) == 0, stats["optimizer"]


def _explained_in_cluster(disc, graph, node: str) -> None:
    report = disc.explain(graph, fed=("x", "n")).to_dict()
    assert any(node in c["nodes"] for c in report["clusters"]), report
    assert not any(r["op"] in FRAME_OPS for r in report["not_clustered"]), report


def _while(x, n):
    """A run-time trip count; the carried tensor keeps its shape, y is
    loop-invariant."""
    y = tf.exp(x * 0.1)

    def body(i, a, s):
        a = tf.tanh(a) * 0.9 + y * 0.1
        return i + 1, a, s + tf.reduce_sum(a)

    _, r, s = tf.while_loop(lambda i, a, s: i < n, body, [0, x, tf.constant(0.0)])
    return tf.reduce_sum(r, 1) * 2.0 + s


def test_while_loop_with_runtime_trip_count_compiles_whole(disc):
    graph, x, n, out = _graph(_while)
    _assert_one_launch_compiled_once(disc, graph, x, n, out)
    _explained_in_cluster(disc, graph, "while/LoopCond")


def _nested(x, n):
    def outer(i, a):
        def inner(j, b):
            return j + 1, b * 0.5 + tf.sin(b)

        _, b = tf.while_loop(lambda j, b: j < i, inner, [0, a])
        return i + 1, b + 1.0

    _, r = tf.while_loop(lambda i, a: i < n, outer, [0, x * 0.3])
    return r * 2.0


def test_nested_while_loops_compile_whole(disc):
    graph, x, n, out = _graph(_nested)
    _assert_one_launch_compiled_once(disc, graph, x, n, out, seed=1)


def _cond(x, n):
    a = tf.exp(x * 0.1)
    r = tf.cond(n > 2, lambda: tf.tanh(a) * 2.0, lambda: tf.concat([a, a - 1.0], 0))
    return tf.reduce_sum(r, 1) * 3.0


def test_top_level_cond_compiles_whole(disc):
    graph, x, n, out = _graph(_cond)
    _assert_one_launch_compiled_once(disc, graph, x, n, out, seed=2)


def _cond_in_while(x, n):
    def body(i, a):
        a = tf.cond(tf.equal(i % 2, 0), lambda: tf.tanh(a) + 0.5, lambda: a * 0.7 - tf.sigmoid(a))
        return i + 1, a

    _, r = tf.while_loop(lambda i, a: i < n, body, [0, x])
    return r + 1.0


def test_cond_inside_a_while_body_compiles_whole(disc):
    graph, x, n, out = _graph(_cond_in_while)
    _assert_one_launch_compiled_once(disc, graph, x, n, out, seed=3)


def test_frozen_graph_def_with_a_legacy_loop_compiles_whole(disc):
    """A GraphDef as a frozen TF1 model ships it, imported into a new graph."""
    graph_def = _graph(_cond_in_while)[0].as_graph_def()
    graph = tf.Graph()
    with graph.as_default():
        tf.import_graph_def(graph_def, name="")
    x, n = graph.get_tensor_by_name("x:0"), graph.get_tensor_by_name("n:0")
    out = graph.get_tensor_by_name("out:0")
    _assert_one_launch_compiled_once(disc, graph, x, n, out, seed=4)
    _explained_in_cluster(disc, graph, "while/LoopCond")


def _stateful(x, n):
    def body(i, a):
        noise = tf.random.uniform(tf.shape(a), seed=5)
        return i + 1, tf.tanh(a) + noise

    _, r = tf.while_loop(lambda i, a: i < n, body, [0, x])
    return r * 2.0


def test_loop_with_a_stateful_op_stays_in_tf_and_is_explained(disc):
    graph, x, n, out = _graph(_stateful)
    with graph.as_default():
        tf.compat.v1.set_random_seed(9)
    feeds = _feeds(5)[:6]
    expected = _stock_results(disc, graph, x, n, out, feeds)
    with tf.compat.v1.Session(graph=graph) as session:
        ops = tf1_executed_ops(session, out, {x: feeds[0][0], n: feeds[0][1]})
        assert {"Enter", "Exit", "LoopCond"} <= set(ops), ops
        assert not set(ops) & FUNCTIONAL, ops
    # A fresh session replays the seeded random sequence stock TF saw.
    with tf.compat.v1.Session(graph=graph) as session:
        for (xv, nv), want in zip(feeds, expected):
            np.testing.assert_allclose(session.run(out, {x: xv, n: nv}), want,
                                       rtol=1e-5, atol=1e-5)
    assert total(disc.stats(), "fallbacks") == 0, disc.stats()
    text = str(disc.explain(graph, fed=("x", "n")))
    assert "(LoopCond): control-flow frame: " in text, text
    assert "(RandomUniform): stateful/resource" in text, text


def test_functionalized_loop_left_out_of_clusters_runs_in_tf(disc):
    """A functionalized loop whose cluster is below the minimum size stays in
    the session's graph as a functional While (its cond and body added to the
    library) beside a cluster, and TF runs it."""
    graph = tf.Graph()
    with graph.as_default(), _legacy_control_flow():
        x = tf.compat.v1.placeholder(F, [None, None], name="x")
        n = tf.compat.v1.placeholder(tf.int32, [], name="n")
        _, r = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, tf.tanh(a)), [0, x])
        side = tf.reduce_sum(tf.exp(x * 0.5) - tf.sin(x) * 2.0 + 1.0, 1)
        out = (tf.identity(r, name="loop_out"), tf.identity(side, name="side_out"))
    feeds = _feeds(6)
    disc.disable()
    try:
        with tf.compat.v1.Session(graph=graph) as session:
            expected = [session.run(out, {x: xv, n: nv}) for xv, nv in feeds]
    finally:
        disc.enable(min_cluster_size=4)
    with tf.compat.v1.Session(graph=graph) as session:
        ops = tf1_executed_ops(session, out, {x: feeds[0][0], n: feeds[0][1]})
        assert ops.count("DiscLaunch") == 1 and "While" in ops, ops
        assert not set(ops) & FRAME_OPS, ops
        for (xv, nv), want in zip(feeds, expected):
            for got, ref in zip(session.run(out, {x: xv, n: nv}), want):
                np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    assert total(disc.stats(), "compiles") == 1, disc.stats()
    assert total(disc.stats(), "fallbacks") == 0, disc.stats()


def test_fetched_loop_and_cond_results_compile_and_keep_their_names(disc):
    """TF1 code fetches tf.while_loop's result (an Exit) and tf.cond's (a
    Merge) directly: both are compiled and the fetches still resolve."""
    graph = tf.Graph()
    with graph.as_default(), _legacy_control_flow():
        x = tf.compat.v1.placeholder(F, [None, None], name="x")
        n = tf.compat.v1.placeholder(tf.int32, [], name="n")
        _, r = tf.while_loop(lambda i, a: i < n, lambda i, a: (i + 1, tf.tanh(a) * 2.0 + 1.0),
                             [0, x])
        c = tf.cond(n > 2, lambda: tf.exp(x) * 3.0, lambda: tf.sin(x) - 1.0)
    assert r.op.type == "Exit" and c.op.type == "Merge"
    feeds = _feeds(7)
    disc.disable()
    try:
        with tf.compat.v1.Session(graph=graph) as session:
            expected = [session.run([r, c], {x: xv, n: nv}) for xv, nv in feeds]
    finally:
        disc.enable()
    with tf.compat.v1.Session(graph=graph) as session:
        ops = tf1_executed_ops(session, [r, c], {x: feeds[0][0], n: feeds[0][1]})
        assert "DiscLaunch" in ops and not set(ops) & (FRAME_OPS | FUNCTIONAL), ops
        for (xv, nv), want in zip(feeds, expected):
            for got, ref in zip(session.run([r, c], {x: xv, n: nv}), want):
                np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    stats = disc.stats()
    assert total(stats, "compiles") == ops.count("DiscLaunch"), stats
    assert total(stats, "fallbacks") == 0, stats


def test_functionalized_loop_falls_back_to_tf_when_not_compiled(disc):
    """No compile allowed: the DiscLaunch holding the functionalized loop
    (a cond in its body) runs its function in TF (the While kernel, running
    the produced body inline), with stock TF's results."""
    graph, x, n, out = _graph(_cond_in_while)
    feeds = _feeds(8)[:8]
    expected = _stock_results(disc, graph, x, n, out, feeds)
    disc.enable(forbid_compile=True)
    with tf.compat.v1.Session(graph=graph) as session:
        assert "DiscLaunch" in tf1_executed_ops(session, out, {x: feeds[0][0], n: feeds[0][1]})
        for (xv, nv), want in zip(feeds, expected):
            np.testing.assert_allclose(session.run(out, {x: xv, n: nv}), want,
                                       rtol=1e-5, atol=1e-5)
    stats = disc.stats()
    assert total(stats, "compiles") == 0 and total(stats, "fallbacks") == len(feeds) + 1, stats
