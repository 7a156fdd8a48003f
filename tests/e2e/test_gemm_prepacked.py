"""fp32 weights packed once (runtime/cpu/packed_weights.h, gemm_packed.h
PackFp32B): a float GEMM whose transposed B comes straight from a resource
variable's read is packed on its first call (row-major weights never are) and then served from the packed copy
while the variable's buffer is unchanged.  Checked against numpy over odd
m, n, k around the kernel's tiles (14 rows, 32 columns, 384-long k blocks),
both B layouts, batched and broadcast B, with an epilogue; an updated
variable (assign, assign_add, an optimizer step) gives new results; two
clusters reading one variable share one copy; computed B is never packed."""
import itertools

import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf import _library
from graph_inspection import total

# The packed kernel is in the avx512 kernel library: weights are packed where
# it runs (this CPU, under DISC_MAX_CPU_ISA).
PACKED = _library.load().stats()["cpu"]["kernels"] == "avx512"
MS = [1, 5, 14, 15, 33, 130]
NKS = [(1, 1), (31, 17), (33, 64), (70, 385), (200, 800)]


@pytest.fixture
def one(disc):
    """Single GEMMs clustered; fp32 pre-packing on (the default)."""
    disc.set_options(min_cluster_size=1)
    yield disc
    disc.set_options(min_cluster_size=2)


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _close(got, want, k):
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-6 * max(k, 16) * scale)


def _fp32(disc):
    return disc.stats()["fp32_weights"]


def _weight_matmul(v, transpose_b):
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def f(a):
        return tf.matmul(a, v, transpose_b=transpose_b)
    return f


@pytest.mark.parametrize("transpose_b", [False, True])
def test_weight_matches_numpy_over_odd_shapes(one, transpose_b):
    packs = _fp32(one)["packs"]
    for i, (n, k) in enumerate(NKS):
        w = _rand((k, n), 100 + i)
        v = tf.Variable(w.T.copy() if transpose_b else w)
        f = _weight_matmul(v, transpose_b)
        for m in MS:  # one packed copy serves every row count
            a = _rand((m, k), m)
            _close(f(a).numpy(), a.astype(np.float64) @ w, k)
        with one.kernel_policy(prepack_weights=False):  # B packed per call agrees
            _close(f(a).numpy(), a.astype(np.float64) @ w, k)
    if PACKED:
        assert _fp32(one)["packs"] - packs == (len(NKS) if transpose_b else 0), one.stats()
    assert total(one.stats(), "fallbacks") == 0


def test_packed_bytes_in_the_gauge(one):
    w = _rand((96, 80), 1)
    v = tf.Variable(w.T.copy())
    f = _weight_matmul(v, True)
    before = _fp32(one)
    _close(f(_rand((20, 96), 2)).numpy(), _rand((20, 96), 2).astype(np.float64) @ w, 96)
    after = _fp32(one)
    if PACKED:  # n = 80 padded to 32 columns: 96 x 96 floats
        assert after["packs"] - before["packs"] == 1, (before, after)
        assert after["bytes"] - before["bytes"] == 96 * 96 * 4, (before, after)


def test_batched_and_broadcast_weight(one):
    """B a [3, k, n] variable (one packed entry per batch entry), and a 2-D
    weight broadcast over A's batch (one entry for all); n = 145: several
    column tasks sharing A packed once per batch entry."""
    w3 = _rand((3, 70, 145), 3)
    w2 = _rand((70, 145), 4)
    v3, v2 = tf.Variable(np.swapaxes(w3, 1, 2).copy()), tf.Variable(w2.T.copy())

    @tf.function(input_signature=[tf.TensorSpec([3, None, 70], tf.float32)])
    def f(a):
        return tf.matmul(a, v3, transpose_b=True) + tf.matmul(a, v2, transpose_b=True)

    packs = _fp32(one)["packs"]
    for rows in (1, 17, 50):
        a = _rand((3, rows, 70), rows)
        want = np.einsum("brk,bkn->brn", a.astype(np.float64), w3) + a.astype(np.float64) @ w2
        _close(f(a).numpy(), want, 70)
    if PACKED:
        assert _fp32(one)["packs"] - packs == 2, one.stats()


@pytest.mark.parametrize("transpose_b", [False, True])
def test_epilogue_on_packed_weight(one, transpose_b):
    w, bias = _rand((385, 257), 5), _rand((257,), 6)
    v = tf.Variable(w.T.copy() if transpose_b else w)

    @tf.function(input_signature=[tf.TensorSpec([None, 385], tf.float32)])
    def f(a):
        return tf.nn.gelu(tf.matmul(a, v, transpose_b=transpose_b) + bias, approximate=True)

    for rows in (3, 29, 300):
        a = _rand((rows, 385), rows)
        want = tf.nn.gelu(a.astype(np.float64) @ w + bias, approximate=True).numpy()
        _close(f(a).numpy(), want, 385)


@pytest.mark.parametrize("transpose_b", [False, True])
def test_updated_variable_gives_new_results(one, transpose_b):
    """assign_add writes in place when nothing else holds the buffer (the
    packed copy holds it, so TF copies first); assign replaces it; both
    must be seen."""
    w = _rand((130, 70), 7)
    v = tf.Variable(w.T.copy() if transpose_b else w)
    f = _weight_matmul(v, transpose_b)
    a = _rand((40, 130), 8)
    _close(f(a).numpy(), a.astype(np.float64) @ w, 130)
    packs = _fp32(one)["packs"]
    v.assign_add(np.full(v.shape, 0.5, np.float32))
    _close(f(a).numpy(), a.astype(np.float64) @ (w + 0.5), 130)
    v.assign(-v)
    _close(f(a).numpy(), a.astype(np.float64) @ -(w + 0.5), 130)
    _close(f(a).numpy(), a.astype(np.float64) @ -(w + 0.5), 130)
    if PACKED:
        assert _fp32(one)["packs"] == packs + (2 if transpose_b else 0), one.stats()


def test_optimizer_steps_are_seen(one):
    """A training loop: the forward GEMM reads the weight packed, SGD
    updates it each step; every step's loss matches TF's."""
    w0 = _rand((16, 64), 9) * 0.1  # used transposed: the packed route
    x, y = _rand((32, 64), 10), _rand((32, 16), 11)

    def run(use_disc):
        v = tf.Variable(w0)
        opt = tf.keras.optimizers.SGD(0.1)

        @tf.function(input_signature=[])
        def step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(tf.matmul(x, v, transpose_b=True) - y))
            opt.apply_gradients([(tape.gradient(loss, v), v)])
            return loss

        @tf.function(input_signature=[])
        def predict():
            return tf.matmul(x, v, transpose_b=True)

        losses, preds = [], []
        for _ in range(4):
            losses.append(step().numpy())
            preds.append(predict().numpy())
        return np.array(losses), preds, v.numpy()

    one.disable()
    want_losses, want_preds, want_w = run(False)
    one.enable(min_cluster_size=1)
    got_losses, got_preds, got_w = run(True)
    np.testing.assert_allclose(got_losses, want_losses, rtol=1e-4)
    for got, want in zip(got_preds, want_preds):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-4, atol=1e-6)
    assert len({p.tobytes() for p in got_preds}) == 4  # each step changed the result


def test_two_clusters_share_one_copy(one):
    w = _rand((100, 90), 12)
    v = tf.Variable(w.T.copy())
    f, g = _weight_matmul(v, True), _weight_matmul(v, True)
    a = _rand((20, 100), 13)
    packs = _fp32(one)["packs"]
    _close(f(a).numpy(), a.astype(np.float64) @ w, 100)
    _close(g(a).numpy(), a.astype(np.float64) @ w, 100)
    assert _fp32(one)["packs"] - packs == (1 if PACKED else 0), one.stats()


def test_computed_weight_is_never_packed(one):
    w = _rand((64, 48), 14)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
    def f(a, b):
        return tf.matmul(a, b, transpose_b=True)

    packs = _fp32(one)["packs"]
    for scale, m in itertools.product((1.0, -2.0), (3, 40)):
        a = _rand((m, 64), m)
        _close(f(a, (w * scale).T.copy()).numpy(), a.astype(np.float64) @ (w * scale), 64)
    assert _fp32(one)["packs"] == packs, one.stats()
