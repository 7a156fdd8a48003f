"""While loops compiled whole (ops/control_flow.py, passes/program.py,
codegen/cpu/program.py): tf.while_loop with a run-time trip count, TensorList
RNNs (TensorArray in TF2) and a loop whose carried tensor grows, against
TF over many shapes including empty sequences, through the ctypes harness
(one compile per rank signature)."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler.frontend.functions import with_nested_functions
from blade_disc_tf.compiler.service import compile_request

from .harness import DiscError, Executable
from .nested_functions import check_against_tf as _check
from .nested_functions import compile_function as _compile

F = tf.float32


def _counted(x, n):
    def cond(i, acc):
        return i < n

    def body(i, acc):
        return i + 1, tf.tanh(acc * 1.5 + 0.1)

    return tf.while_loop(cond, body, [tf.constant(0), x])


def test_run_time_trip_count(compiler):
    exe, dt = _compile(compiler, _counted, [tf.TensorSpec([None, None], F),
                                            tf.TensorSpec([], tf.int32)])
    rng = np.random.default_rng(0)
    for shape, n in [((2, 3), 5), ((0, 4), 3), ((3, 1), 0), ((1, 1), 1), ((4, 7), 17),
                     ((5, 0), 2), ((1, 9), -3)]:
        _check(exe, dt, _counted, [rng.standard_normal(shape).astype(np.float32), np.int32(n)])


def _rnn(x, w, u, bias):
    """A tanh RNN over x [batch, time, features] the way Keras builds one:
    TensorArrays read and written at the loop counter, weights invariant."""
    steps = tf.shape(x)[1]
    xs = tf.TensorArray(F, size=steps).unstack(tf.transpose(x, [1, 0, 2]))
    out = tf.TensorArray(F, size=steps, element_shape=tf.TensorShape([None, u.shape[0]]))
    h0 = tf.zeros([tf.shape(x)[0], u.shape[0]])

    def body(t, h, out):
        h = tf.tanh(tf.matmul(xs.read(t), w) + tf.matmul(h, u) + bias)
        return t + 1, h, out.write(t, h)

    _, h, out = tf.while_loop(lambda t, h, out: t < steps, body, [0, h0, out])
    return h, tf.transpose(out.stack(), [1, 0, 2])


def test_tensor_list_rnn(compiler):
    units, feat = 8, 5
    specs = [tf.TensorSpec([None, None, feat], F), tf.TensorSpec([feat, units], F),
             tf.TensorSpec([units, units], F), tf.TensorSpec([units], F)]
    exe, dt = _compile(compiler, _rnn, specs)
    rng = np.random.default_rng(1)
    w = rng.standard_normal((feat, units)).astype(np.float32) * 0.3
    u = rng.standard_normal((units, units)).astype(np.float32) * 0.3
    b = rng.standard_normal(units).astype(np.float32)
    for batch, steps in [(2, 5), (1, 1), (4, 13), (1, 2), (0, 3), (8, 32)]:
        x = rng.standard_normal((batch, steps, feat)).astype(np.float32)
        _check(exe, dt, _rnn, [x, w, u, b], tol=1e-4)
    # No step at all: TF cannot stack a list whose batch dim no row fixed,
    # and neither can we (the same InvalidArgument message).
    x0 = np.zeros((3, 0, feat), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="empty list") as tf_err:
        tf.function(_rnn, input_signature=specs)(*[tf.constant(v) for v in (x0, w, u, b)])
    with pytest.raises(DiscError, match="Tried to stack elements of an empty list with "
                                        r"non-fully-defined element_shape: \[\?,8\]"):
        exe([x0, w, u, b], dt)
    assert "[?,8]" in str(tf_err.value)


def _grow(x, n):
    """A decode-style loop: the carried sequence grows by one row per step."""
    def body(i, seq):
        nxt = tf.tanh(tf.reduce_sum(seq, axis=0, keepdims=True) * 0.1 + tf.cast(i, F))
        return i + 1, tf.concat([seq, nxt], axis=0)

    return tf.while_loop(lambda i, seq: i < n, body, [0, x],
                         shape_invariants=[tf.TensorShape([]), tf.TensorShape([None, None])])


def test_growing_carried_tensor(compiler):
    exe, dt = _compile(compiler, _grow, [tf.TensorSpec([None, None], F),
                                         tf.TensorSpec([], tf.int32)])
    rng = np.random.default_rng(2)
    for shape, n in [((1, 4), 6), ((2, 3), 0), ((3, 1), 1), ((1, 8), 20), ((0, 2), 3)]:
        _check(exe, dt, _grow, [rng.standard_normal(shape).astype(np.float32), np.int32(n)])


def _nested(x, n):
    def outer(i, acc):
        _, inner = tf.while_loop(lambda j, a: j < i, lambda j, a: (j + 1, a * 0.5 + 1.0),
                                 [0, acc])
        return i + 1, inner + tf.reduce_mean(inner)

    return tf.while_loop(lambda i, acc: i < n, outer, [0, x])


def test_nested_loops(compiler):
    exe, dt = _compile(compiler, _nested, [tf.TensorSpec([None], F),
                                           tf.TensorSpec([], tf.int32)])
    rng = np.random.default_rng(3)
    for size, n in [(3, 4), (1, 0), (5, 1), (2, 6)]:
        _check(exe, dt, _nested, [rng.standard_normal(size).astype(np.float32), np.int32(n)])


def _list_out_of_range(x, n):
    out = tf.TensorArray(F, size=2, element_shape=tf.TensorShape([None]))

    def body(i, out):
        return i + 1, out.write(i, x)

    return tf.while_loop(lambda i, o: i < n, body, [0, out])[1].stack()


def test_list_index_out_of_range_is_invalid_argument(compiler):
    exe, dt = _compile(compiler, _list_out_of_range, [tf.TensorSpec([None], F),
                                                      tf.TensorSpec([], tf.int32)])
    x = np.ones(3, np.float32)
    _check(exe, dt, _list_out_of_range, [x, np.int32(2)])
    with pytest.raises(DiscError, match="Trying to modify element 2 in a list with 2 elements"):
        exe([x, np.int32(3)], dt)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Trying to modify element 2 in a list with 2 elements"):
        tf.function(_list_out_of_range)(tf.constant(x), tf.constant(3))


def _push(x, n):
    """A list grown by TensorListPushBack in the loop, then its length."""
    empty = tf.raw_ops.TensorListReserve(element_shape=tf.shape(x), num_elements=0,
                                         element_dtype=F)

    def body(i, lst):
        return i + 1, tf.raw_ops.TensorListPushBack(input_handle=lst,
                                                    tensor=x * tf.cast(i, F))

    _, lst = tf.while_loop(lambda i, lst: i < n, body, [0, empty])
    return (tf.raw_ops.TensorListStack(input_handle=lst, element_shape=tf.shape(x),
                                       element_dtype=F),
            tf.raw_ops.TensorListLength(input_handle=lst))


def test_push_back_and_length(compiler):
    exe, dt = _compile(compiler, _push, [tf.TensorSpec([None, 3], F),
                                         tf.TensorSpec([], tf.int32)])
    rng = np.random.default_rng(4)
    for rows, n in [(2, 4), (1, 1), (3, 0), (0, 2)]:
        _check(exe, dt, _push, [rng.standard_normal((rows, 3)).astype(np.float32), np.int32(n)])


def test_program_split_into_units_builds_and_runs(compiler, monkeypatch, tmp_path):
    """A program's segments spread over two translation units (built in
    parallel, linked) run as the one-unit library does."""
    from blade_disc_tf.compiler import service
    from blade_disc_tf.compiler.codegen.cpu import program
    monkeypatch.setattr(service, "parallel_units", lambda cpus, runnable: 2)
    monkeypatch.setattr(program, "MIN_UNIT_CHARS", 4000)  # this small program splits too
    monkeypatch.setattr(service, "_runnable_tasks", lambda: 1)
    units, feat = 8, 5
    specs = [tf.TensorSpec([None, None, feat], F), tf.TensorSpec([feat, units], F),
             tf.TensorSpec([units, units], F), tf.TensorSpec([units], F)]
    concrete = tf.function(_rnn).get_concrete_function(*specs)
    data = with_nested_functions(concrete.function_def, concrete.graph.as_graph_def().library)
    req = {"function": "rnn_units", "key": "k", "inputs": [
        {"dtype": t.dtype.as_datatype_enum, "rank": t.shape.rank} for t in concrete.inputs]}
    single, sources = service.compile_to_units(req, data, units=2)
    assert len(sources) == 2 and "disc_entry" in sources[0] and "disc_entry" not in sources[1]
    from blade_disc_tf.compiler.options import CompileOptions
    reply = compile_request(req, data, CompileOptions(cache_dir=str(tmp_path / "c")))
    assert reply["ok"], reply
    exe = Executable(reply["path"])
    dt = [t.dtype.as_numpy_dtype for t in concrete.outputs]
    rng = np.random.default_rng(5)
    w = rng.standard_normal((feat, units)).astype(np.float32) * 0.3
    u = rng.standard_normal((units, units)).astype(np.float32) * 0.3
    b = rng.standard_normal(units).astype(np.float32)
    for batch, steps in [(2, 5), (3, 9)]:
        x = rng.standard_normal((batch, steps, feat)).astype(np.float32)
        _check(exe, dt, _rnn, [x, w, u, b], tol=1e-4)
