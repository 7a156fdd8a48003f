"""Conv2D, DepthwiseConv2dNative, _FusedConv2D, MaxPool/MaxPoolV2/AvgPool and
FusedBatchNorm(V3) inference through DiscLaunch (the real runtime's
rt->window) against stock TF eager, over many shapes (1-sized and odd dims,
stride 2 on odd sizes, SAME padding asymmetry) with one compile per
function, plus TF's errors for bad shapes."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import cluster_stats, total

F = tf.float32
IMAGES = [(1, 1, 1), (1, 5, 7), (2, 8, 8), (1, 9, 4), (3, 2, 11), (1, 13, 13)]


def _rand(shape, seed, dt=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dt)


def _close(got, want, rtol):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def _run(disc, fn, specs, cases, rtol=1e-4):
    """fn compiled once per cluster (dynamic dims), run on every case vs TF
    eager."""
    disc.enable(min_cluster_size=1)
    compiled = tf.function(fn, input_signature=specs)
    for inputs in cases:
        got = compiled(*inputs)
        want = fn(*[tf.constant(x) for x in inputs])
        for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
            _close(g, w, rtol)
    st = disc.stats()
    assert total(st, "fallbacks") == 0, st
    clusters = cluster_stats(st)
    assert clusters and all(c["runs"] == len(cases) and c["compiles"] == 1 for c in clusters), st


def _spec(rank, dt=F):
    return tf.TensorSpec([None] * rank, dt)


def _conv_cases(images, kh, kw, cin, cout, seed=0, dt=np.float32):
    return [[_rand((n, h, w, cin), seed + i, dt), _rand((kh, kw, cin, cout), 50 + i, dt)]
            for i, (n, h, w) in enumerate(images)]


@pytest.mark.parametrize("padding", ["SAME", "VALID", [[0, 0], [1, 2], [0, 3], [0, 0]]])
@pytest.mark.parametrize("k,strides,dil", [((3, 3), 1, 1), ((3, 2), 2, 1), ((1, 1), 1, 1),
                                           ((1, 1), 2, 1), ((2, 3), (1, 2), 1),
                                           ((3, 3), 1, (2, 1))])
def test_conv2d(disc, padding, k, strides, dil):
    def fn(x, f):
        return tf.nn.conv2d(x, f, strides, padding, dilations=dil)
    if dil != 1 and isinstance(padding, list):
        pytest.skip("stock TF returns wrong shapes for explicit padding with dilation")
    images = IMAGES if padding != "VALID" else [s for s in IMAGES if min(s[1:]) >= 5]
    _run(disc, fn, [_spec(4), _spec(4)], _conv_cases(images, *k, 3, 5))


def test_conv2d_wide_channels_and_f64(disc):
    def fn(x, f):
        return tf.nn.conv2d(x, f, 2, "SAME")
    _run(disc, fn, [_spec(4), _spec(4)], _conv_cases([(1, 17, 17), (2, 8, 9)], 7, 7, 3, 70))
    disc.reset_stats()
    disc.clear_executable_cache()
    _run(disc, fn, [_spec(4, tf.float64), _spec(4, tf.float64)],
         _conv_cases([(1, 6, 5), (2, 3, 3)], 3, 3, 4, 6, dt=np.float64), rtol=1e-10)


def test_fused_conv_bias_relu_and_batch_norm(disc):
    def fn(x, f, b, s, o, m, v):
        y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, f, 1, "SAME"), b))
        z = tf.raw_ops.FusedBatchNormV3(x=y, scale=s, offset=o, mean=m, variance=v,
                                         epsilon=1e-3, is_training=False)[0]
        return tf.nn.relu6(z)
    specs = [_spec(4), _spec(4)] + [_spec(1)] * 5
    cases = []
    for i, (inp, filt) in enumerate(_conv_cases(IMAGES, 3, 3, 4, 6)):
        vec = [_rand((6,), 90 + 5 * i + j) for j in range(5)]
        cases.append([inp, filt, *vec[:4], np.abs(vec[4]) + 0.1])
    _run(disc, fn, specs, cases)


@pytest.mark.parametrize("direct", [False, True])
@pytest.mark.parametrize("padding,k,strides,dil,cin,cout", [
    ("SAME", (3, 3), 1, 1, 8, 64), ("SAME", (7, 7), 2, 1, 3, 70), ("VALID", (3, 2), 2, 1, 5, 16),
    ([[0, 0], [1, 2], [0, 3], [0, 0]], (3, 3), 1, 1, 4, 21), ("SAME", (3, 3), 1, (1, 2), 6, 33),
    ("VALID", (1, 1), 2, 1, 7, 130), ("SAME", (1, 1), 1, 1, 9, 48),
    ("SAME", (3, 3), 1, 1, 40, 100)])
def test_conv2d_direct_and_gemm_paths(disc, direct, padding, k, strides, dil, cin, cout):
    """The direct kernel (runtime/cpu/conv_direct.cc) and the im2col GEMM, each
    forced by kernel policy direct_conv, on outputs wide enough for full register
    tiles plus ragged pixel and channel tails (40->100: a filter larger
    than the input, so the channel-block-major task order, over several
    pixel runs and a partial block)."""
    def fn(x, f):
        return tf.nn.conv2d(x, f, strides, padding, dilations=dil)
    images = [(1, 19, 23), (2, 14, 9), (1, 5, 31), (3, 8, 8)]
    with disc.kernel_policy(direct_conv=direct):
        _run(disc, fn, [_spec(4), _spec(4)], _conv_cases(images, *k, cin, cout))


def test_conv2d_direct_tiles_with_epilogue(disc):
    """The direct kernel's register tiles (FMAs with the input broadcast
    from memory) on 7x7 images (49 pixels: 5- and 6-pixel tiles) and odd
    widths, 77 output channels (one full 64-channel block, a 13-channel
    tail) and the bias + Relu6 epilogue applied to the registers before
    the store."""
    def fn(x, f, b):
        return tf.nn.relu6(tf.nn.bias_add(tf.nn.conv2d(x, f, 1, "SAME"), b))
    cases = [[x, f, _rand((77,), 70 + i)] for i, (x, f) in enumerate(
        _conv_cases([(2, 7, 7), (1, 11, 13), (3, 5, 9), (1, 1, 3)], 3, 3, 5, 77))]
    with disc.kernel_policy(direct_conv=True):
        _run(disc, fn, [_spec(4), _spec(4), _spec(1)], cases)


@pytest.mark.parametrize("strides,dil", [(1, 1), (2, 1), (1, 2)])
def test_conv2d_direct_block_major_runs(disc, strides, dil):
    """A filter larger than the input (block-major task order) over more
    than 256 output pixels: runs of up to 256 pixels that cross image
    boundaries (5 and 7 images), each with its own padded band, and a
    partial 36-channel block after a full one, with the bias + Relu
    epilogue."""
    def fn(x, f, b):
        y = tf.nn.conv2d(x, f, strides, "SAME", dilations=dil)
        return tf.nn.relu(tf.nn.bias_add(y, b))
    images = [(5, 8, 8), (7, 7, 7), (1, 19, 23), (9, 6, 6)]
    cases = [[x, f, _rand((100,), 80 + i)]
             for i, (x, f) in enumerate(_conv_cases(images, 3, 3, 48, 100))]
    with disc.kernel_policy(direct_conv=True):
        _run(disc, fn, [_spec(4), _spec(4), _spec(1)], cases)


@pytest.mark.parametrize("k,cin,cout,strides", [((3, 3), 150, 100, 1), ((1, 1), 700, 64, 2),
                                               ((3, 3), 75, 128, 1), ((3, 3), 130, 200, 2)])
def test_conv2d_direct_long_filter_passes(disc, k, cin, cout, strides):
    """Filter rows over 640 per block where a block's rows are at most 128
    channels apart (runtime/cpu/conv_direct.cc kLongChunk): several long passes
    of unequal split (1350 rows in 3, 700 in 2, 675 in 2), a partial
    block, and at 200 channels the 128-row passes again, each with the
    bias + Relu epilogue on the last pass only."""
    def fn(x, f, b):
        y = tf.nn.conv2d(x, f, strides, "SAME")
        return tf.nn.relu(tf.nn.bias_add(y, b))
    images = [(2, 9, 11), (1, 5, 7), (3, 4, 4)]
    cases = [[x, f, _rand((cout,), 40 + i)]
             for i, (x, f) in enumerate(_conv_cases(images, *k, cin, cout))]
    with disc.kernel_policy(direct_conv=True):
        _run(disc, fn, [_spec(4), _spec(4), _spec(1)], cases, rtol=2e-4)


@pytest.mark.parametrize("padding,strides", [("SAME", 1), ("SAME", 2),
                                             ([[0, 0], [2, 0], [1, 3], [0, 0]], 1)])
@pytest.mark.parametrize("cin,cout", [(64, 20), (512, 128)])
def test_conv2d_direct_bands_over_budget(disc, padding, strides, cin, cout):
    """Padded inputs larger than a task's band budget (runtime/cpu/conv_direct.cc
    RunInput: 64K floats pixel-major, 512K block-major): a thread's bands
    are cut short of its pixels and rebuilt, within an image and across
    image boundaries; 512->128 is block-major with the whole padded input
    over its budget, so each band starts at the task's own run."""
    def fn(x, f, b):
        y = tf.nn.conv2d(x, f, strides, padding)
        return tf.nn.relu(tf.nn.bias_add(y, b))
    images = [(2, 40, 37), (9, 12, 12)] if cin == 64 else [(9, 9, 9), (2, 13, 11)]
    cases = [[x, f, _rand((cout,), 60 + i)]
             for i, (x, f) in enumerate(_conv_cases(images, 3, 3, cin, cout))]
    with disc.kernel_policy(direct_conv=True):
        _run(disc, fn, [_spec(4), _spec(4), _spec(1)], cases, rtol=2e-4)


@pytest.mark.parametrize("padding,k,strides", [("SAME", (3, 3), 1), ("VALID", (1, 1), 1),
                                               ("VALID", (3, 2), 2), ("SAME", (1, 1), 2)])
def test_grouped_conv2d(disc, padding, k, strides):
    """Input depth a multiple of the filter's: TF's grouped convolution, the
    group count (1, 2, 3, 4) changing from call to call under one compile."""
    def fn(x, f):
        return tf.nn.conv2d(x, f, strides, padding)
    cases = []
    for i, ((n, h, w), groups, cg, og) in enumerate(
            [((1, 9, 9), 2, 3, 2), ((2, 6, 11), 3, 2, 4), ((1, 12, 5), 1, 4, 3),
             ((1, 16, 16), 4, 8, 16), ((2, 5, 7), 2, 1, 1)]):
        cases.append([_rand((n, h, w, groups * cg), i), _rand((*k, cg, groups * og), 30 + i)])
    _run(disc, fn, [_spec(4), _spec(4)], cases)


@pytest.mark.parametrize("padding,k,strides,dil,mult", [
    ("SAME", (7, 7), 1, 1, 1), ("VALID", (3, 2), 2, 1, 2), ("SAME", (3, 3), 1, 2, 3)])
def test_grouped_conv2d_one_group_per_channel(disc, tmp_path, padding, k, strides, dil, mult):
    """Filter in-depth 1 and static depths (Keras' Conv2D(groups=channels),
    ConvNeXt's 7x7 convolutions): lowered as a depthwise window."""
    c = 6

    def fn(x, f):
        return tf.nn.conv2d(x, f, strides, padding, dilations=dil)
    cases = [[_rand((n, h, w, c), i), _rand((*k, 1, c * mult), 30 + i)]
             for i, (n, h, w) in enumerate([(1, 9, 9), (2, 6, 11), (1, 12, 5), (3, 7, 4)])]
    disc.set_options(dump_dir=str(tmp_path))
    _run(disc, fn, [tf.TensorSpec([None, None, None, c]), tf.TensorSpec([*k, 1, c * mult])],
         cases)
    sources = "".join(p.read_text() for p in tmp_path.rglob("*.cc"))
    assert "DISC_WINDOW_DEPTHWISE" in sources and "DISC_WINDOW_CONV;" not in sources


def test_grouped_conv2d_errors_are_tf_errors(disc):
    disc.enable(min_cluster_size=1)

    @tf.function(input_signature=[_spec(4), _spec(4)])
    def conv(x, f):
        return tf.nn.conv2d(x, f, 1, "SAME")
    for f_shape, msg in [((3, 3, 3, 6), "input depth must be evenly divisible by filter depth: 4 vs 3"),
                         ((3, 3, 2, 5), "output depth must be evenly divisible by number of "
                                        "groups: 5 vs 2")]:
        with pytest.raises(tf.errors.InvalidArgumentError, match=msg):
            conv(_rand((1, 4, 4, 4), 0), _rand(f_shape, 1))
    st = disc.stats()
    assert total(st, "fallbacks") == 0 and total(st, "compiles") == 1, st


@pytest.mark.parametrize("direct", [False, True])
@pytest.mark.parametrize("act", [tf.nn.relu, tf.nn.relu6, tf.nn.elu, None])
def test_fused_epilogues(disc, direct, act):
    """Conv / depthwise + bias or batch norm (+ activation), which the
    remapper fuses and we apply as the window's epilogue (relu, relu6) or as
    elementwise ops (elu), on both convolution paths."""
    def fn(x, f, d, b, s, o, m, v):
        y = tf.nn.bias_add(tf.nn.conv2d(x, f, 1, "SAME"), b)
        z = tf.raw_ops.FusedBatchNormV3(x=tf.nn.conv2d(x, f, 2, "VALID"), scale=s, offset=o,
                                         mean=m, variance=v, epsilon=1e-3, is_training=False)[0]
        w = tf.nn.bias_add(tf.nn.depthwise_conv2d(x, d, [1, 1, 1, 1], "SAME"), b[:4])
        return (y, z, w) if act is None else (act(y), act(z), act(w))
    specs = [_spec(4)] * 3 + [_spec(1)] * 5
    cases = []
    for i, (n, h, w) in enumerate([(1, 9, 13), (2, 6, 5), (1, 3, 17)]):
        vec = [_rand((20,), 90 + 5 * i + j) for j in range(5)]
        cases.append([_rand((n, h, w, 4), i), _rand((3, 3, 4, 20), 40 + i),
                      _rand((3, 3, 4, 1), 60 + i), *vec[:4], np.abs(vec[4]) + 0.1])
    with disc.kernel_policy(direct_conv=direct):
        _run(disc, fn, specs, cases)


def test_bias_relu_is_the_window_epilogue(disc, tmp_path):
    """Grappler's _FusedConv2D(BiasAdd, Relu) reaches the runtime as one
    window call with the bias and DISC_ACT_RELU (no loop over its output)."""
    disc.enable(min_cluster_size=1, dump_dir=str(tmp_path))

    @tf.function(input_signature=[_spec(4), _spec(4), _spec(1)])
    def fn(x, f, b):
        return tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, f, 1, "SAME"), b))
    x, f, b = _rand((1, 6, 7, 3), 0), _rand((3, 3, 3, 8), 1), _rand((8,), 2)
    _close(fn(x, f, b), tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, f, 1, "SAME"), b)), 1e-4)
    sources = "".join(p.read_text() for p in tmp_path.rglob("*.cc"))
    assert "w.activation = DISC_ACT_RELU;" in sources and "w.shift = " in sources


@pytest.mark.parametrize("act", [tf.nn.relu, tf.nn.relu6])
def test_depthwise_epilogue_on_registers(disc, act):
    """Depthwise + bias (+ activation) with 86 channels: the epilogue applied
    on the 4-packet and 1-packet register blocks and on the scalar tail."""
    def fn(x, f, b):
        return act(tf.nn.bias_add(tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME"), b))
    cases = [[_rand((n, h, w, 86), i), _rand((3, 3, 86, 1), 10 + i), _rand((86,), 20 + i)]
             for i, (n, h, w) in enumerate([(1, 9, 13), (2, 6, 5), (1, 1, 3)])]
    _run(disc, fn, [_spec(4), _spec(4), _spec(1)], cases)


@pytest.mark.parametrize("strides", [1, 2])
def test_depthwise_streamed_output(disc, strides):
    """Depthwise + bias + Relu6 whose output passes 8 MiB (2x88x88x160
    floats: non-temporal stores of the register blocks) and smaller ones
    (ordinary stores; at stride 1 the 6-pixel groups that load each input
    vector once per filter row), 160 channels (two 4-packet blocks, two
    1-packet ones; five 2-packet ones) and 83 (a scalar tail: no
    streaming)."""
    def fn(x, f, b):
        y = tf.nn.depthwise_conv2d(x, f, [1, strides, strides, 1], "SAME")
        return tf.nn.relu6(tf.nn.bias_add(y, b))
    shapes = [(2, 88 * strides, 88 * strides, 160), (1, 9, 13, 160), (3, 90, 90, 83)]
    cases = [[_rand(s, i), _rand((3, 3, s[3], 1), 10 + i), _rand((s[3],), 20 + i)]
             for i, s in enumerate(shapes)]
    _run(disc, fn, [_spec(4), _spec(4), _spec(1)], cases)


@pytest.mark.parametrize("padding", ["SAME", "VALID", [[0, 0], [1, 0], [2, 1], [0, 0]],
                                     [[0, 0], [0, 1], [0, 1], [0, 0]]])
def test_depthwise_row_groups(disc, padding):
    """Stride-1 3x3 depthwise + bias + Relu6 over row widths 1..19: rows
    split into groups of up to 8 pixels, a padding column at either edge
    taken by the group kernel, two (pad_left 2) left to the per-pixel
    path; 40 channels (a 2-packet block, a 1-packet one, a scalar tail);
    NaN inputs stay NaN through the epilogue.  (No bias with explicit
    padding: stock TF's shape function aborts on the fused depthwise op.)"""
    def fn(x, f, b):
        y = tf.nn.depthwise_conv2d(x, f, [1, 1, 1, 1], padding)
        return tf.nn.relu6(tf.nn.bias_add(y, b) if isinstance(padding, str) else y)
    cases = []
    for i, width in enumerate(range(1 if padding == "SAME" else 3, 20)):
        x = _rand((2, 4, width, 40), i)
        x[1, 2, width // 2, 3] = np.nan
        cases.append([x, _rand((3, 3, 40, 1), 30 + i), _rand((40,), 60 + i)])
    disc.enable(min_cluster_size=1)
    compiled = tf.function(fn, input_signature=[_spec(4), _spec(4), _spec(1)])
    for x, f, b in cases:
        got, want = compiled(x, f, b).numpy(), fn(tf.constant(x), f, b).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        _close(np.nan_to_num(got), np.nan_to_num(want), 1e-4)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("mult,strides,dil", [(1, 1, 1), (1, 2, 1), (2, 1, 1), (1, 1, 2)])
def test_depthwise(disc, padding, mult, strides, dil):
    def fn(x, f):
        return tf.raw_ops.DepthwiseConv2dNative(input=x, filter=f, strides=[1, strides, strides, 1],
                                                padding=padding, dilations=[1, dil, dil, 1])
    images = IMAGES if padding == "SAME" else [s for s in IMAGES if min(s[1:]) >= 5]
    _run(disc, fn, [_spec(4), _spec(4)], _conv_cases(images, 3, 3, 4, mult))


@pytest.mark.parametrize("pool", ["max", "avg"])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("k,strides", [(2, 2), (3, 2), (3, 1), ((1, 3), (2, 1))])
def test_pool(disc, pool, padding, k, strides):
    op = tf.nn.max_pool2d if pool == "max" else tf.nn.avg_pool2d

    def fn(x):
        return op(x, k, strides, padding)
    images = IMAGES if padding == "SAME" else [s for s in IMAGES if min(s[1:]) >= 3]
    _run(disc, fn, [_spec(4)], [[_rand((n, h, w, 3), i)] for i, (n, h, w) in enumerate(images)])


def test_max_pool_v2_const_ksize(disc):
    def fn(x):
        return tf.raw_ops.MaxPoolV2(input=x, ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1],
                                    padding="SAME") * 2.0
    _run(disc, fn, [_spec(4)], [[_rand((n, h, w, 2), i)] for i, (n, h, w) in enumerate(IMAGES)])


def _batch_norm_v3(x, s, o, m, v):
    return tf.raw_ops.FusedBatchNormV3(x=x, scale=s, offset=o, mean=m, variance=v,
                                       epsilon=1e-2, is_training=False)


def test_fused_batch_norm_outputs(disc):
    """y and the batch statistics against TF; reserve_space_1/2, which TF's
    inference kernel allocates and never writes, against their documented
    values (the given mean and variance), never against TF's."""
    cases = [[_rand((n, h, w, 3), i)] + [_rand((3,), 10 + j) for j in range(3)]
             + [np.abs(_rand((3,), 20)) + 0.5] for i, (n, h, w) in enumerate(IMAGES[1:])]
    _run(disc, lambda *xs: _batch_norm_v3(*xs)[:3], [_spec(4)] + [_spec(1)] * 4, cases)
    reserve = tf.function(lambda *xs: [t * 1.0 for t in _batch_norm_v3(*xs)[3:5]],
                          input_signature=[_spec(4)] + [_spec(1)] * 4)
    for x, s, o, m, v in cases:
        got = reserve(x, s, o, m, v)
        np.testing.assert_array_equal(got[0].numpy(), m)
        np.testing.assert_array_equal(got[1].numpy(), v)
    assert total(disc.stats(), "fallbacks") == 0


def test_errors_are_tf_errors(disc):
    disc.enable(min_cluster_size=1)

    @tf.function(input_signature=[_spec(4), _spec(4)])
    def valid(x, f):
        return tf.nn.conv2d(x, f, 1, "VALID")
    valid(_rand((1, 4, 4, 2), 0), _rand((3, 3, 2, 2), 1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="output size would be negative"):
        valid(_rand((1, 1, 4, 2), 0), _rand((3, 3, 2, 2), 1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="depth"):
        valid(_rand((1, 4, 4, 3), 0), _rand((3, 3, 2, 2), 1))


@pytest.mark.parametrize("dt", [tf.float16, tf.bfloat16])
def test_half_types_compute_in_f32(disc, dt):
    """Half inputs: computed in float32 and rounded once, as TF's CPU kernels."""
    def fn(x, f):
        y = tf.nn.conv2d(x, f, 2, "SAME")
        return tf.nn.max_pool2d(y, 2, 1, "VALID"), tf.nn.depthwise_conv2d(
            x, f[:, :, :, :1], [1, 1, 1, 1], "SAME")
    np_dt = dt.as_numpy_dtype
    cases = [[_rand((n, h, w, 3), i).astype(np_dt), (_rand((3, 3, 3, 4), 9 + i) / 4).astype(np_dt)]
             for i, (n, h, w) in enumerate([(1, 5, 7), (2, 8, 8), (1, 9, 4)])]
    _run(disc, fn, [_spec(4, dt), _spec(4, dt)], cases, rtol=2e-2)
