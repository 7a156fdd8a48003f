"""Functional conditionals compiled whole through DiscLaunch (issue 24):
tf.cond (StatelessIf) and tf.switch_case (StatelessCase) in a tf.function,
and a tf.cond inside a while loop's body, are inside one cluster with the
ops around them, compiled once per rank signature, against stock TF over
20 shapes (0- and 1-sized dims, both branches, a Case index in and out of
range), and so is a tf.cond in a TF1 Session graph; a branch with a stateful
op or branches returning different ranks keep the conditional in TF and
explain() says why.  Legacy (v1) Switch/Merge conditionals:
test_legacy_frames.py."""
import glob

import numpy as np
import tensorflow as tf

from graph_inspection import tf1_executed_ops, tf2_executed_ops, tf2_function_graphs, total

F = tf.float32
SHAPES = [(2, 3), (0, 3), (1, 1), (3, 0), (1, 7), (5, 1), (4, 4), (0, 0), (7, 2), (1, 0),
          (2, 9), (6, 5), (3, 3), (8, 1), (1, 2), (9, 4), (2, 2), (0, 1), (4, 6), (10, 3)]
MATRIX_AND_INT = [tf.TensorSpec([None, None], F), tf.TensorSpec([], tf.int32)]
CONDITIONALS = ("If", "StatelessIf", "Case", "StatelessCase")


def _top_level_ops(call) -> list[str]:
    """Op types of the executed top-level graphs (cluster functions' bodies,
    kept for the fallback, are not counted)."""
    return [n.op for g in tf2_function_graphs(call) for n in g.post_optimization_graph.node]


def _assert_inside_one_launch(disc, dump, call, ir_op: str) -> None:
    """call's graph is one DiscLaunch with no conditional or Switch/Merge
    left around it, and the IR it compiled holds the `ir_op` op."""
    disc.enable(dump_dir=str(dump))
    try:
        top = _top_level_ops(call)
    finally:
        disc.enable(dump_dir=None)
    assert top.count("DiscLaunch") == 1, top
    assert not set(top) & set(CONDITIONALS + ("Switch", "Merge")), top
    (ir,) = glob.glob(str(dump / "disc_cluster_*" / "*" / "ir_control_flow.mlir"))
    assert f"= {ir_op}(" in open(ir).read()


def _stock_function(disc, fn, signature: list, args: list):
    """fn as a tf.function stock TF runs: instantiated, by its first call
    (with args), while blade_disc_tf is disabled."""
    disc.disable()
    try:
        ref = tf.function(fn, input_signature=signature)
        assert "DiscLaunch" not in tf2_executed_ops(lambda: ref(*args))
    finally:
        disc.enable()
    return ref


def _compiled_and_stock(disc, dump, fn, signature: list, first: list, ir_op: str):
    """(fn as a tf.function blade_disc_tf compiles, checked to hold the IR
    `ir_op` inside its one DiscLaunch on its first call with `first`; fn as
    stock TF runs it)."""
    ref = _stock_function(disc, fn, signature, first)
    f = tf.function(fn, input_signature=signature)
    _assert_inside_one_launch(disc, dump, lambda: f(*first), ir_op)
    return f, ref


def _assert_compiled_once(disc) -> None:
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats
    for op in CONDITIONALS:
        assert stats["optimizer"]["ops_left_in_tf"].get(op, 0) == 0, stats["optimizer"]


def _cond(x, y, p):
    """The branches' results differ in shape: the taken one's counts."""
    a = tf.exp(x * 0.1)
    r = tf.cond(p, lambda: tf.tanh(a) * 2.0 + y, lambda: tf.concat([a, y * 0.5], 0))
    return tf.reduce_sum(r, axis=1) + 1.0


def test_cond_is_inside_the_cluster_and_compiled_once(disc, tmp_path):
    one = np.ones((2, 3), np.float32)
    f, ref = _compiled_and_stock(disc, tmp_path, _cond, [tf.TensorSpec([None, None], F)] * 2 +
                                 [tf.TensorSpec([], tf.bool)], [one, one, True], "if")
    rng = np.random.default_rng(0)
    for k, shape in enumerate(SHAPES):
        x, y = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
        for p in (k % 2 == 0, k % 2 == 1):
            np.testing.assert_allclose(f(x, y, p).numpy(), ref(x, y, p).numpy(),
                                       rtol=1e-5, atol=1e-5)
    _assert_compiled_once(disc)


def _switch(x, i):
    a = x * 2.0 - 1.0
    r = tf.switch_case(i, [lambda: a + 1.0, lambda: tf.reduce_sum(a, 0, keepdims=True),
                           lambda: tf.tile(tf.sigmoid(a), [2, 1])])
    return r * 3.0


def test_switch_case_in_and_out_of_range(disc, tmp_path):
    f, ref = _compiled_and_stock(disc, tmp_path, _switch, MATRIX_AND_INT,
                                 [np.ones((2, 2), np.float32), 0], "case")
    rng = np.random.default_rng(1)
    for k, shape in enumerate(SHAPES):
        x = rng.standard_normal(shape).astype(np.float32)
        for i in (k % 3, 3 + k, -1 - k):  # in range; out of range runs the last branch
            want = ref(x, i).numpy()
            np.testing.assert_allclose(f(x, i).numpy(), want, rtol=1e-5, atol=1e-5)
            if i > 2 or i < 0:
                assert want.shape == (2 * shape[0], shape[1])
    _assert_compiled_once(disc)


def _loop(x, n):
    def body(i, acc):
        acc = tf.cond(i % 3 == 0, lambda: tf.tanh(acc * 1.5 + 0.1), lambda: acc - 0.25)
        return i + 1, acc

    return tf.while_loop(lambda i, a: i < n, body, [tf.constant(0), x])[1] * 2.0


def test_cond_inside_a_while_body(disc, tmp_path):
    f, ref = _compiled_and_stock(disc, tmp_path, _loop, MATRIX_AND_INT,
                                 [np.ones((2, 2), np.float32), 2], "if")
    rng = np.random.default_rng(2)
    for k, shape in enumerate(SHAPES):
        x = rng.standard_normal(shape).astype(np.float32)
        n = k % 7
        np.testing.assert_allclose(f(x, n).numpy(), ref(x, n).numpy(), rtol=1e-5, atol=1e-5)
    _assert_compiled_once(disc)


def test_stateful_branch_stays_in_tf_and_is_explained(disc):
    def fn(x, p):
        r = tf.cond(p, lambda: x + tf.random.uniform(tf.shape(x), seed=1) * 0.0,
                    lambda: x * 3.0)
        return tf.exp(r) * 2.0

    f = tf.function(fn, input_signature=[tf.TensorSpec([None], F),
                                         tf.TensorSpec([], tf.bool)])
    x = np.zeros(3, np.float32)
    top = _top_level_ops(lambda: f(x, True))  # TF runs it, lowered to Switch/Merge
    assert "RandomUniform" in top and "Merge" in top, top
    np.testing.assert_allclose(f(x, True).numpy(), np.full(3, 2.0))
    np.testing.assert_allclose(f(x, False).numpy(), np.full(3, 2.0))
    text = str(disc.explain(f, x, True))
    assert "RandomUniform is stateful" in text, text


def test_branches_of_different_ranks_stay_in_tf_and_are_explained(disc):
    def fn(x, p):
        a = tf.exp(x)
        return tf.cond(p, lambda: a, lambda: tf.reduce_sum(a, 0)) * 2.0

    f = tf.function(fn, input_signature=[tf.TensorSpec([None, None], F),
                                         tf.TensorSpec([], tf.bool)])
    x = np.ones((2, 3), np.float32)
    top = _top_level_ops(lambda: f(x, True))  # TF runs it, lowered to Switch/Merge
    assert "Merge" in top and "DiscLaunch" in top, top
    np.testing.assert_allclose(f(x, True).numpy(), np.full((2, 3), 2 * np.e), rtol=1e-6)
    np.testing.assert_allclose(f(x, False).numpy(), np.full(3, 4 * np.e), rtol=1e-6)
    assert total(disc.stats(), "fallbacks") == 0, disc.stats()
    text = str(disc.explain(f, x, True))
    assert "StatelessIf output 0 has no static rank" in text, text


def _session_graph():
    """A TF1 graph with a tf.cond (StatelessIf under control flow v2, TF2's
    default, graph mode included)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(F, [None, None], name="x")
        p = tf.compat.v1.placeholder(tf.bool, [], name="p")
        a = tf.exp(x * 0.1)
        r = tf.cond(p, lambda: tf.tanh(a) * 2.0, lambda: tf.concat([a, a - 1.0], 0))
        out = tf.identity(tf.reduce_sum(r, 1) * 3.0, name="out")
    return graph, x, p, out


def _session_reference(x, p):
    a = np.exp(x * 0.1)
    r = np.tanh(a) * 2.0 if p else np.concatenate([a, a - 1.0], 0)
    return r.sum(1) * 3.0


def test_session_cond_is_compiled_whole(disc):
    graph, x, p, out = _session_graph()
    with tf.compat.v1.Session(graph=graph) as session:
        ops = tf1_executed_ops(session, out, {x: np.ones((2, 3), np.float32), p: True})
        assert ops.count("DiscLaunch") == 1, ops
        assert not set(ops) & set(CONDITIONALS + ("Switch", "Merge")), ops
        rng = np.random.default_rng(3)
        for k, shape in enumerate(SHAPES):
            xv = rng.standard_normal(shape).astype(np.float32)
            for pv in (k % 2 == 0, k % 2 == 1):
                np.testing.assert_allclose(session.run(out, {x: xv, p: pv}),
                                           _session_reference(xv, pv), rtol=1e-5, atol=1e-5)
    _assert_compiled_once(disc)


def test_variables_read_in_branches_are_read_before_the_cond(disc, tmp_path):
    """A layer's weights read inside the branches: the reads move before the
    conditional (in TF), which compiles whole and sees later assignments."""
    rng = np.random.default_rng(4)
    w = tf.Variable(rng.standard_normal((3, 4)).astype(np.float32))
    b = tf.Variable(np.ones(4, np.float32))

    def fn(x, p):
        h = tf.tanh(x)
        r = tf.cond(p, lambda: tf.matmul(h, w) + b, lambda: tf.matmul(h * 2.0, w) - 1.0)
        return tf.nn.relu(r)

    sig = [tf.TensorSpec([None, 3], F), tf.TensorSpec([], tf.bool)]
    one = np.ones((2, 3), np.float32)
    f, ref = _compiled_and_stock(disc, tmp_path, fn, sig, [one, True], "if")
    for k, n in enumerate((0, 1, 2, 5, 9)):
        if k == 3:
            w.assign(w * -2.0)
        x = rng.standard_normal((n, 3)).astype(np.float32)
        for p in (True, False):
            np.testing.assert_allclose(f(x, p).numpy(), ref(x, p).numpy(), rtol=1e-5, atol=1e-5)
    _assert_compiled_once(disc)


def test_variables_read_in_a_cond_inside_a_while_body(disc, tmp_path):
    """A loop body passing weights to a tf.cond that reads them: the reads
    move before the conditional (in the body), then before the loop, and
    the loop with its conditional compiles whole, seeing later assignments."""
    rng = np.random.default_rng(5)
    w = tf.Variable(rng.standard_normal((4, 4)).astype(np.float32) * 0.5)
    v = tf.Variable(rng.standard_normal((4, 4)).astype(np.float32) * 0.5)

    def fn(x, n):
        def body(i, h):
            h = tf.cond(i % 2 == 0, lambda: tf.tanh(tf.matmul(h, w)), lambda: tf.matmul(h, v) - h)
            return i + 1, h

        return tf.while_loop(lambda i, h: i < n, body, [tf.constant(0), x])[1]

    sig = [tf.TensorSpec([None, 4], F), tf.TensorSpec([], tf.int32)]
    f, ref = _compiled_and_stock(disc, tmp_path, fn, sig, [np.ones((2, 4), np.float32), 3],
                                 "while")
    for k, rows in enumerate((0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 1, 7, 4, 9, 2, 6, 11, 16, 30, 64)):
        if k == 10:
            v.assign(v * -1.5)
        x = rng.standard_normal((rows, 4)).astype(np.float32)
        n = k % 6
        np.testing.assert_allclose(f(x, n).numpy(), ref(x, n).numpy(), rtol=1e-4, atol=1e-5)
    _assert_compiled_once(disc)
