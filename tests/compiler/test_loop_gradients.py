"""Gradients of loops (issue 24): while_v2 keeps each forward value the
gradient needs in a list (EmptyTensorList + TensorListPushBack in the
forward loop, TensorListPopBack in the backward one), shapes included
(host lists, ops/tensor_list.py).  Checked against TF through the ctypes
harness over shapes including empty batches and zero iterations."""
import numpy as np
import pytest
import tensorflow as tf

from loop_programs import loss_and_grad

from .harness import DiscError
from .nested_functions import check_against_tf as _check
from .nested_functions import compile_function as _compile

F = tf.float32


def _push_pop(x, n):
    """Pushed forward, popped in reverse: each popped row weighted by its
    position, and the list's final length."""
    empty = tf.raw_ops.EmptyTensorList(element_shape=tf.shape(x), max_num_elements=-1,
                                       element_dtype=F)

    def fwd(i, lst):
        return i + 1, tf.raw_ops.TensorListPushBack(input_handle=lst,
                                                    tensor=tf.sin(x * tf.cast(i + 1, F)))

    _, lst = tf.while_loop(lambda i, lst: i < n, fwd, [0, empty])

    def bwd(i, lst, acc):
        lst, item = tf.raw_ops.TensorListPopBack(input_handle=lst, element_shape=tf.shape(x),
                                                 element_dtype=F)
        return i + 1, lst, acc * 0.5 + item

    _, lst, acc = tf.while_loop(lambda i, lst, acc: i < n, bwd, [0, lst, tf.zeros_like(x)])
    return acc, tf.raw_ops.TensorListLength(input_handle=lst)


def test_push_then_pop_in_reverse(compiler):
    exe, dt = _compile(compiler, _push_pop, [tf.TensorSpec([None, 3], F),
                                             tf.TensorSpec([], tf.int32)])
    rng = np.random.default_rng(4)
    for rows, n in [(2, 4), (1, 1), (3, 0), (0, 2), (5, 9), (1, 30)]:
        _check(exe, dt, _push_pop, [rng.standard_normal((rows, 3)).astype(np.float32),
                                    np.int32(n)])


def _pop_one(x, n):
    lst = tf.raw_ops.TensorListFromTensor(tensor=x, element_shape=tf.shape(x)[1:])
    for _ in range(2):
        lst, item = tf.raw_ops.TensorListPopBack(input_handle=lst,
                                                 element_shape=tf.shape(x)[1:], element_dtype=F)
    return item * tf.cast(n, F), tf.raw_ops.TensorListLength(input_handle=lst)


def test_pop_from_a_list_of_rows_and_from_an_empty_one(compiler):
    exe, dt = _compile(compiler, _pop_one, [tf.TensorSpec([None, None], F),
                                            tf.TensorSpec([], tf.int32)])
    rng = np.random.default_rng(5)
    for shape in [(2, 3), (5, 1), (3, 0)]:
        _check(exe, dt, _pop_one, [rng.standard_normal(shape).astype(np.float32), np.int32(2)])
    short = np.ones((1, 3), np.float32)
    with pytest.raises(DiscError, match="is not in"):
        exe([short, np.int32(1)], dt)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.function(_pop_one)(tf.constant(short), tf.constant(1))


def test_gradient_of_a_while_loop(compiler):
    exe, dt = _compile(compiler, loss_and_grad, [tf.TensorSpec([None, None], F),
                                                  tf.TensorSpec([None, None], F),
                                                  tf.TensorSpec([], tf.int32)])
    graph = tf.function(loss_and_grad)
    rng = np.random.default_rng(6)
    for batch, units, n in [(2, 8, 3), (1, 4, 5), (4, 8, 1), (3, 2, 0), (0, 8, 2), (6, 16, 12)]:
        x = rng.standard_normal((batch, units)).astype(np.float32)
        w = (rng.standard_normal((units, units)) * 0.3).astype(np.float32)
        # TF's graph (eager runs no loop for n = 0 and has no gradient)
        _check(exe, dt, graph, [x, w, np.int32(n)], tol=1e-4)


def _list_arithmetic(x):
    """What gradients do with lists besides push and pop: zeros like a list,
    lists summed (AddN), a list's element shape (dense: its dims; reserved
    with unknown dims: -1 there, as TF answers)."""
    lst = tf.raw_ops.TensorListFromTensor(tensor=x, element_shape=tf.shape(x)[1:])
    zeros = tf.raw_ops.ZerosLike(x=lst)
    total = tf.raw_ops.AddN(inputs=[lst, zeros, lst])
    reserved = tf.raw_ops.TensorListReserve(element_shape=[-1, 3], num_elements=2,
                                            element_dtype=F)
    return (tf.raw_ops.TensorListStack(input_handle=total, element_shape=tf.shape(x)[1:],
                                       element_dtype=F),
            tf.raw_ops.TensorListElementShape(input_handle=lst, shape_type=tf.int32),
            tf.raw_ops.TensorListElementShape(input_handle=reserved, shape_type=tf.int64))


def test_zeros_sum_and_element_shape_of_lists(compiler):
    exe, dt = _compile(compiler, _list_arithmetic, [tf.TensorSpec([None, None, 3], F)])
    rng = np.random.default_rng(7)
    for shape in [(2, 4, 3), (1, 1, 3), (5, 2, 3)]:
        _check(exe, dt, _list_arithmetic, [rng.standard_normal(shape).astype(np.float32)])
