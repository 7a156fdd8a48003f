"""runtime/share_for.h: the parallel-for of generated kernels and GEMMs on
TF's intra-op pool.  Every index runs exactly once; a region uses at most as
many threads as the pool has, the calling thread among them (TF's
ParallelFor handed every block to the workers and left the caller asleep:
the large-region test fails with DISC_POOL_SHARE=0); small regions stay on
the caller; results are the same bits either way."""
import ctypes

import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf import _library


def _probe(pool_threads: int, n: int, cost: int, spin_us: int):
    counts = (ctypes.c_int64 * n)()
    caller_ran = ctypes.c_int32(0)
    threads = _library.load()._c.DiscShareForProbe(pool_threads, n, cost, spin_us, counts,
                                                   ctypes.byref(caller_ran))
    return threads, list(counts), bool(caller_ran.value)


@pytest.mark.parametrize("pool_threads", [2, 3])
@pytest.mark.parametrize("n", [2, 7, 64, 1000])
def test_large_region_runs_every_index_once_on_at_most_pool_threads(pool_threads, n):
    threads, counts, caller_ran = _probe(pool_threads, n, cost=10**7, spin_us=200)
    assert counts == [1] * n
    assert caller_ran
    assert 1 <= threads <= pool_threads
    if n >= 64:  # ~13 ms of blocks: a helper surely joins
        assert threads >= 2


def test_small_region_stays_on_the_caller():
    # 8 x 10000 cycles: below two threads' worth of work (Eigen's cost model)
    threads, counts, caller_ran = _probe(2, 8, cost=10000, spin_us=0)
    assert counts == [1] * 8
    assert (threads, caller_ran) == (1, True)


def test_empty_region_runs_nothing():
    lib = _library.load()._c
    counts = (ctypes.c_int64 * 1)()
    caller_ran = ctypes.c_int32(0)
    assert lib.DiscShareForProbe(2, 0, 10**7, 0, counts, ctypes.byref(caller_ran)) == 0
    assert counts[0] == 0 and caller_ran.value == 0


def test_same_bits_as_tf_parallel_for(disc):
    """GEMMs (skinny, packed, Eigen blocks), a stitch (softmax) and loop
    kernels over shapes from inline to multi-threaded regions."""
    @tf.function(input_signature=[tf.TensorSpec([None, None, 64], tf.float32),
                                  tf.TensorSpec([64, 96], tf.float32)])
    def f(x, w):
        h = tf.nn.gelu(tf.matmul(x, w) + 0.5)
        s = tf.nn.softmax(tf.matmul(h, h, transpose_b=True) * 0.1)
        return tf.matmul(s, h) + tf.reduce_mean(h, axis=-1, keepdims=True)

    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 96)).astype(np.float32)
    for b, s in [(1, 3), (2, 40), (4, 128), (8, 300)]:
        x = rng.standard_normal((b, s, 64)).astype(np.float32)
        want = f(x, w).numpy()
        with disc.runtime_switches(DISC_POOL_SHARE="0"):
            np.testing.assert_array_equal(f(x, w).numpy(), want)
        with disc.runtime_switches(DISC_POOL_SHARE="1"):
            np.testing.assert_array_equal(f(x, w).numpy(), want)
        # eager: stock TF's kernels, op by op
        np.testing.assert_allclose(f.python_function(x, w).numpy(), want, rtol=2e-4, atol=2e-4)
    clusters = disc.stats()["clusters"].values()
    assert sum(c["compiles"] for c in clusters) == 1
    assert sum(c["fallbacks"] for c in clusters) == 0
