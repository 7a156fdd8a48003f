"""fast_math="bf16" on Conv2D (runtime/cpu/conv_bf16.h): within the GEMM's
documented error bound (k = k_h * k_w * in_c) against float64 over many
dynamic shapes (strides, padding, dilation, 1x1s, the 3-channel stem, the
fused bias/batch-norm/relu epilogue), one compile per cluster key, the option
in the key, a variable filter packed once, and fp32 results with it off.
Where the CPU has no bf16 kernel the same tests run the fp32 convolution
(errors then far below the bound)."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf import _library
from graph_inspection import total

HAS_BF16 = _library.load().stats()["cpu"]["selected"] in ("avx512_bf16", "avx512_amx")
MIN_BF16_ROWS = 16  # gemm_bf16.cc kMinRows: fewer output pixels keep fp32


@pytest.fixture
def fm(disc):
    disc.set_options(min_cluster_size=1)
    with disc.kernel_policy(bf16_gemm="on"):
        yield disc
    disc.set_options(fast_math="", min_cluster_size=2)


def _conv64(x, f, stride, padding, dilation, absolute=False):
    x64, f64 = tf.constant(x.astype(np.float64)), tf.constant(f.astype(np.float64))
    if absolute:
        x64, f64 = tf.abs(x64), tf.abs(f64)
    return tf.nn.conv2d(x64, f64, stride, padding, dilations=dilation).numpy()


def _err_over_bound(got, x, f, stride, padding, dilation) -> tuple:
    """(max error / documented bound, max error / (|x| * |f|))."""
    k = f.shape[0] * f.shape[1] * f.shape[2]
    err = np.abs(got.astype(np.float64) - _conv64(x, f, stride, padding, dilation))
    scale = _conv64(x, f, stride, padding, dilation, absolute=True) + 1e-30
    bound = (2.0 ** -7 + 2.0 ** -15 + k * 2.0 ** -23) * scale
    return float(np.max(err / bound)), float(np.max(err / scale))


# (k_h, k_w, in_c, out_c, stride, padding, dilation)
CONVS = [(3, 3, 16, 70, 1, "SAME", 1), (3, 3, 16, 64, 2, "VALID", 1),
         (1, 1, 64, 130, 1, "VALID", 1), (1, 1, 40, 24, 2, "SAME", 1),
         (7, 7, 3, 64, 2, "SAME", 1), (3, 3, 8, 33, 1, "SAME", 2), (5, 3, 24, 300, 1, "SAME", 1)]
IMAGES = [(1, 9, 11), (2, 17, 16), (3, 5, 40), (1, 3, 4)]  # (1, 3, 4): too few rows for bf16


@pytest.mark.parametrize("case", range(len(CONVS)))
def test_conv_within_bound_one_compile(fm, case):
    kh, kw, ci, co, stride, padding, dilation = CONVS[case]
    rng = np.random.default_rng(case)
    f = rng.standard_normal((kh, kw, ci, co)).astype(np.float32)
    filt = tf.Variable(f)

    @tf.function(input_signature=[tf.TensorSpec([None, None, None, ci], tf.float32)])
    def conv(x):
        return tf.nn.conv2d(x, filt, stride, padding, dilations=dilation)

    fm.set_options(fast_math="bf16")
    seen = 0.0
    for n, h, w in IMAGES:
        x = rng.standard_normal((n, h, w, ci)).astype(np.float32)
        got = conv(x).numpy()
        ratio, rel = _err_over_bound(got, x, f, stride, padding, dilation)
        assert ratio <= 1.0, ((n, h, w), ratio)
        if got.shape[0] * got.shape[1] * got.shape[2] >= MIN_BF16_ROWS:
            seen = max(seen, rel)
    if HAS_BF16:  # the bf16 kernel ran: errors far above fp32's
        assert seen > 2.0 ** -12, seen
    else:
        assert seen <= 2.0 ** -16, seen
    stats = fm.stats()
    assert total(stats, "compiles") == 1 and total(stats, "fallbacks") == 0, stats
    (keys,) = [c["keys"] for c in stats["clusters"].values()]
    assert keys == ["4,4|fast_math=bf16"], keys  # input and filter ranks
    if HAS_BF16:  # the variable filter: packed once, for every image shape
        assert stats["bf16_weights"]["packs"] == 1, stats["bf16_weights"]


def test_fused_epilogue_within_bound(fm):
    """Conv + BiasAdd + FusedBatchNorm (inference) + Relu: TF's remapper fuses
    them and ours runs the epilogue on the fp32 accumulators."""
    rng = np.random.default_rng(9)
    f = rng.standard_normal((3, 3, 12, 96)).astype(np.float32)
    bias = rng.standard_normal(96).astype(np.float32)
    scale = rng.uniform(0.5, 2.0, 96).astype(np.float32)
    offset = rng.standard_normal(96).astype(np.float32)
    mean = rng.standard_normal(96).astype(np.float32)
    var = rng.uniform(0.5, 2.0, 96).astype(np.float32)
    eps = 1e-3

    @tf.function(input_signature=[tf.TensorSpec([None, None, None, 12], tf.float32)])
    def block(x):
        y = tf.nn.bias_add(tf.nn.conv2d(x, f, 1, "SAME"), bias)
        y, _, _ = tf.compat.v1.nn.fused_batch_norm(y, scale, offset, mean, var, epsilon=eps,
                                                   is_training=False)
        return tf.nn.relu(y)

    fm.set_options(fast_math="bf16")
    a = scale / np.sqrt(var + eps)
    for n, h, w in [(1, 8, 8), (2, 13, 7), (4, 16, 16)]:
        x = rng.standard_normal((n, h, w, 12)).astype(np.float32)
        got = block(x).numpy().astype(np.float64)
        conv = _conv64(x, f, 1, "SAME", 1)
        want = np.maximum((conv + bias - mean) * a + offset, 0.0)
        k = 3 * 3 * 12
        bound = ((2.0 ** -7 + 2.0 ** -15 + k * 2.0 ** -23) * _conv64(x, f, 1, "SAME", 1, True)
                 * np.abs(a) + 2.0 ** -20 * (np.abs(want) + np.abs(bias * a) + np.abs(offset)))
        assert np.all(np.abs(got - want) <= bound), float(np.max(np.abs(got - want) / bound))
    stats = fm.stats()
    # One compile per cluster over the three shapes (the batch-norm constants
    # fold in clusters of their own), the convolution's keyed with the option.
    clusters = stats["clusters"].values()
    assert all(c["compiles"] == 1 for c in clusters) and total(stats, "fallbacks") == 0, stats
    assert ["4|fast_math=bf16"] in [c["keys"] for c in clusters], stats


def test_off_is_fp32_and_matches_tf(fm):
    rng = np.random.default_rng(4)
    f = rng.standard_normal((3, 3, 16, 40)).astype(np.float32)

    @tf.function(input_signature=[tf.TensorSpec([None, None, None, 16], tf.float32)])
    def conv(x):
        return tf.nn.conv2d(x, f, 1, "SAME")

    for n, h, w in [(1, 9, 11), (2, 17, 16)]:
        x = rng.standard_normal((n, h, w, 16)).astype(np.float32)
        got = conv(x).numpy()
        np.testing.assert_allclose(got, conv.python_function(tf.constant(x)).numpy(),
                                   rtol=1e-4, atol=1e-4)
        assert _err_over_bound(got, x, f, 1, "SAME", 1)[1] <= 2.0 ** -16
    stats = fm.stats()
    assert total(stats, "compiles") == 1, stats
    assert all("fast_math" not in key for c in stats["clusters"].values() for key in c["keys"])
