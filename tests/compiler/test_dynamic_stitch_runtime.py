"""DynamicStitch / ParallelDynamicStitch with indices given at run time (the
library op of codegen/cpu/scatter.py) against TF through the ctypes harness:
permutations, duplicates within and across inputs (later wins), gaps
(zero rows, as TF 2.21), empty inputs, scalar and 2-D indices, a constant
index input next to run-time ones, many dtypes, TF's out-of-range error,
and one executable for every size."""
import numpy as np
import pytest
import tensorflow as tf

from .harness import DiscError
from .opwalk import run_against_tf as run

F = tf.float32
rng = np.random.default_rng(11)


def idx(*vals):
    return np.asarray(vals, np.int32)


def stitch2(i, j, x, y):
    return (tf.dynamic_stitch([i, j], [x, y]) * 2.0,
            tf.raw_ops.ParallelDynamicStitch(indices=[i, j], data=[x, y]))


SPECS2 = [tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int32),
          tf.TensorSpec([None, None], F), tf.TensorSpec([None, None], F)]

# (indices[0], indices[1]) patterns
PATTERNS = [
    (idx(0, 2, 4), idx(1, 3)),             # interleaved permutation
    (idx(1, 1, 0), idx(1)),                # duplicates within and across: later wins
    (idx(5, 0), idx(2)),                   # gaps: rows 1, 3, 4 are zero
    (idx(), idx(0, 1)),                    # empty first input
    (idx(), idx()),                        # nothing: zero rows
    (idx(9), idx(3, 3, 3, 3)),             # mostly gaps
    (idx(*range(40)), idx(*range(39, -1, -1))),  # second input overwrites all
]


@pytest.mark.parametrize("pattern", range(len(PATTERNS)))
@pytest.mark.parametrize("k", [3, 1, 0, 17, 64, 100])
def test_run_time_indices(compiler, pattern, k):
    i, j = PATTERNS[pattern]
    x = rng.standard_normal((len(i), k)).astype(np.float32)
    y = rng.standard_normal((len(j), k)).astype(np.float32)
    run(compiler, stitch2, SPECS2, [i, j, x, y])


def test_one_executable_for_every_size(compiler):
    exe, _ = compiler.executable(stitch2, SPECS2)
    for pattern in range(len(PATTERNS)):
        run(compiler, stitch2, SPECS2, [*PATTERNS[pattern], *(
            rng.standard_normal((len(p), 5)).astype(np.float32) for p in PATTERNS[pattern])])
    assert compiler.executable(stitch2, SPECS2)[0] is exe


def stitch_shapes(s, m, v, y, c):
    """A scalar index with scalar data, 2-D indices with [a, b, 2, 3] data
    and a constant index input (rows [7, 0]) next to the run-time ones."""
    return (tf.dynamic_stitch([s, m], [v, y[:, :, 0, 0]]),
            tf.dynamic_stitch([m, tf.constant([7, 0])], [y, c]))


@pytest.mark.parametrize("m", [idx(3, 1).reshape(1, 2), idx(0, 1, 2, 2, 5, 4).reshape(2, 3),
                               np.zeros((0, 4), np.int32), idx(8, 9, 0, 2).reshape(4, 1)])
def test_scalar_2d_and_constant_indices(compiler, m):
    spec = [tf.TensorSpec([], tf.int32), tf.TensorSpec([None, None], tf.int32),
            tf.TensorSpec([], F), tf.TensorSpec([None, None, 2, 3], F),
            tf.TensorSpec([2, 2, 3], F)]
    y = rng.standard_normal(m.shape + (2, 3)).astype(np.float32)
    c = rng.standard_normal((2, 2, 3)).astype(np.float32)
    run(compiler, stitch_shapes, spec, [np.int32(2), m, np.float32(5.0), y, c])


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64, tf.float64, tf.bool])
def test_dtypes(compiler, dtype):
    def fn(i, j, x, y):
        return tf.dynamic_stitch([i, j], [x, y])
    spec = [tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int32),
            tf.TensorSpec([None, 2], dtype), tf.TensorSpec([None, 2], dtype)]
    np_dt = dtype.as_numpy_dtype
    x = (rng.standard_normal((3, 2)) * 10).astype(np_dt)
    y = (rng.standard_normal((2, 2)) * 10).astype(np_dt)
    run(compiler, fn, spec, [idx(4, 0, 1), idx(0, 6), x, y])


def compile_time_gaps(x):
    """Constant indices with a gap (row 2): zero-filled like TF."""
    return tf.dynamic_stitch([[0, 3], [1]], [x[:2] * 2.0, x[2:3]])


def test_constant_indices_with_gaps(compiler):
    run(compiler, compile_time_gaps, [tf.TensorSpec([None, None], F)],
        [rng.standard_normal((3, 4)).astype(np.float32)])


@pytest.mark.parametrize("i,j,bad", [(idx(0, -1, 2), idx(1), 1), (idx(0), idx(2, 1, -5), 2),
                                     (idx(-1), idx(), 0)])
def test_negative_index_is_tfs_error(compiler, i, j, bad):
    exe, out_dt = compiler.executable(stitch2, SPECS2)
    x = np.ones((len(i), 2), np.float32)
    y = np.ones((len(j), 2), np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match=rf"indices\[{bad}\] is out of range"):
        stitch2(*[tf.constant(v) for v in (i, j, x, y)])
    with pytest.raises(DiscError, match=rf"indices\[{bad}\] is out of range .*DynamicStitch"):
        exe([i, j, x, y], out_dt)


def test_data_shape_mismatch(compiler):
    exe, out_dt = compiler.executable(stitch2, SPECS2)
    with pytest.raises(DiscError, match="does not start with indices"):
        exe([idx(0, 1), idx(2), np.ones((3, 2), np.float32), np.ones((1, 2), np.float32)],
            out_dt)


def computed_indices(i, x):
    return tf.dynamic_stitch([i * 2], [x])


def test_indices_computed_in_the_cluster_are_refused(compiler):
    concrete = tf.function(computed_indices).get_concrete_function(
        tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], F))
    reply = compiler.compile(concrete)
    assert not reply["ok"] and "computed at run time inside the cluster" in reply["error"], reply
