"""DepthwiseConv2dNativeBackpropInput / ...BackpropFilter (ops/nn_conv_grad.py,
runtime/cpu/depthwise_grad.cc) through DiscLaunch against stock TF eager:
strides (equal and not), SAME/VALID/EXPLICIT padding, depth
multipliers 1 and 3, channel counts around the kernels' 64- and 16-wide
blocks, the register-blocked 3- and 5-wide windows of both gradients,
odd, 1-sized and empty images, float64, one compile for every shape,
tf.GradientTape of a depthwise layer, InvalidArgument for bad shapes, and
dilated gradients left to TF (its oneDNN kernels ignore dilations)."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import cluster_stats, total

from .test_conv_grad import EXPLICIT, _attrs, _check, _images
from .test_conv_pool import _close, _rand

CONFIGS = [((3, 3), 1, "SAME", 1), ((3, 3), 1, "VALID", 1), ((3, 3), 2, "SAME", 1),
           ((3, 2), (1, 2), "VALID", 1), ((5, 5), 2, "SAME", 1),
           ((3, 3), 2, EXPLICIT, 1), ((3, 3), 1, EXPLICIT, 1), ((2, 2), 3, "VALID", 1),
           ((1, 1), 1, "VALID", 1)]


def _cases(images, k, channels, mult, attrs, dt=np.float32):
    """(x, filter, out_backprop), out_backprop shaped as the forward output."""
    out = []
    for i, (n, h, w) in enumerate(images):
        x, f = _rand((n, h, w, channels), i, dt), _rand((*k, channels, mult), 40 + i, dt)
        fwd = tf.raw_ops.DepthwiseConv2dNative(input=np.zeros((1, h, w, channels), dt),
                                               filter=f, **attrs)
        out.append([x, f, _rand((n,) + tuple(fwd.shape[1:]), 80 + i, dt)])
    return out


def _equal(strides) -> bool:
    """TF's float64 (Eigen) depthwise gradients take equal strides only."""
    return isinstance(strides, int) or strides[0] == strides[1]


def _input_grad(attrs):
    def fn(x, f, dy):
        return tf.raw_ops.DepthwiseConv2dNativeBackpropInput(
            input_sizes=tf.shape(x), filter=f, out_backprop=dy, **attrs)
    return fn


def _filter_grad(attrs):
    def fn(x, f, dy):
        return tf.raw_ops.DepthwiseConv2dNativeBackpropFilter(
            input=x, filter_sizes=tf.shape(f), out_backprop=dy, **attrs)
    return fn


@pytest.mark.parametrize("mult", [1, 3])
@pytest.mark.parametrize("k,strides,padding,dil", CONFIGS)
def test_backprop_input(disc, k, strides, padding, dil, mult):
    attrs = _attrs(strides, padding, dil)
    _check(disc, _input_grad(attrs), _cases(_images(k, padding, dil), k, 5, mult, attrs),
           f64_reference=_equal(strides))


@pytest.mark.parametrize("mult", [1, 3])
@pytest.mark.parametrize("k,strides,padding,dil", CONFIGS)
def test_backprop_filter(disc, k, strides, padding, dil, mult):
    """(An empty batch is test_empty_batch_filter_gradient_is_zero's: TF's
    oneDNN kernel returns uninitialized memory for some of them.)"""
    attrs = _attrs(strides, padding, dil)
    images = [i for i in _images(k, padding, dil) if i[0] > 0]
    _check(disc, _filter_grad(attrs), _cases(images, k, 5, mult, attrs),
           f64_reference=_equal(strides))


@pytest.mark.parametrize("strides,padding", [(1, "VALID"), (2, EXPLICIT), (2, "SAME")])
def test_empty_batch_filter_gradient_is_zero(disc, strides, padding):
    attrs = _attrs(strides, padding, 1)
    disc.enable(min_cluster_size=1)
    fn = tf.function(_filter_grad(attrs), input_signature=[tf.TensorSpec([None] * 4)] * 3)
    for x, f, dy in _cases([(0, 6, 6), (0, 9, 4)], (3, 3), 5, 2, attrs):
        got = fn(x, f, dy).numpy()
        assert got.shape == f.shape and not got.any(), got
    st = disc.stats()
    assert total(st, "fallbacks") == 0 and total(st, "compiles") == 1, st


@pytest.mark.parametrize("channels", [16, 64, 83, 144])
@pytest.mark.parametrize("strides", [1, 2])
def test_channel_blocks_and_threads(disc, channels, strides):
    """Channel counts that fill the filter kernel's 64-wide blocks, its
    16-wide ones and the scalar rest; images big enough to split the rows
    between threads (per-thread partial sums) and to take the stride-1
    input gradient through the depthwise forward kernel."""
    attrs = _attrs(strides, "SAME", 1)

    def fn(x, f, dy):
        return _input_grad(attrs)(x, f, dy), _filter_grad(attrs)(x, f, dy)
    _check(disc, fn, _cases([(2, 30, 29), (1, 7, 40), (3, 12, 12)], (3, 3), channels, 1, attrs),
           rtol=2e-4)


VECTOR_TAPS = [((3, 3), 1, "SAME"), ((3, 3), 2, EXPLICIT), ((5, 5), 1, "VALID"),
               ((5, 5), 2, "SAME"), ((3, 3), 1, [[0, 0], [0, 0], [2, 1], [0, 0]]),
               ((3, 3), 1, [[0, 0], [3, 0], [0, 4], [0, 0]]), ((5, 5), 1, "SAME"),
               ((3, 4), 1, "SAME"), ((5, 3), 3, "SAME")]


@pytest.mark.parametrize("channels", [1, 16, 32, 83])
@pytest.mark.parametrize("k,strides,padding", VECTOR_TAPS)
def test_vector_taps(disc, channels, k, strides, padding):
    """The register-blocked rows of both gradients (filter: 3 or 5 tap
    columns at column stride 1 or 2; input: stride 1, pads past the window
    too), tap rows in groups of up to 3, edge columns one by one, and the
    windows they leave to the other loops (4 columns, stride 3): whole
    16-channel vectors and a scalar rest, images narrower than the window,
    one row, batches 1 to 9."""
    attrs = _attrs(strides, padding, 1)
    pad = [0, 0] if isinstance(padding, str) else [sum(padding[1]), sum(padding[2])]
    images = [(n, h, w) for n, h, w in [(1, 1, 1), (9, 5, 3), (2, 13, 17), (1, 2, 40), (3, 9, 6)]
              if padding == "SAME" or (h + pad[0] >= k[0] and w + pad[1] >= k[1])]

    def fn(x, f, dy):
        return _input_grad(attrs)(x, f, dy), _filter_grad(attrs)(x, f, dy)
    _check(disc, fn, _cases(images, k, channels, 1, attrs), rtol=2e-4)


def test_float64(disc):
    attrs = _attrs(2, "SAME", 1)

    def fn(x, f, dy):
        return _input_grad(attrs)(x, f, dy), _filter_grad(attrs)(x, f, dy)
    _check(disc, fn, _cases([(2, 9, 7), (1, 4, 4)], (3, 3), 19, 2, attrs, np.float64),
           rtol=1e-10)


def test_gradient_tape_of_a_depthwise_layer(disc):
    """tf.GradientTape's own graph is one cluster, compiled once for every
    shape, with both depthwise gradient ops inside it."""
    def fn(x, f, w):
        with tf.GradientTape() as tape:
            tape.watch([x, f])
            y = tf.nn.relu6(tf.nn.depthwise_conv2d(x, f, [1, 2, 2, 1], "SAME"))
        return tape.gradient(y, [x, f], output_gradients=w)
    cases = []
    for i, (n, h, w) in enumerate([(1, 8, 8), (2, 9, 5), (3, 4, 12)]):
        x, f = _rand((n, h, w, 6), i), _rand((3, 3, 6, 1), 10 + i)
        cases.append([x, f, _rand((n, (h + 1) // 2, (w + 1) // 2, 6), 20 + i)])
    _check(disc, fn, cases)
    assert len(cluster_stats(disc.stats())) == 1


@pytest.mark.parametrize("op", ["input", "filter"])
def test_bad_out_backprop_is_invalid_argument(disc, op):
    """Wrong rows, batch or depth: TF's InvalidArgument naming the op (TF's
    oneDNN kernels say Aborted: could not create a primitive descriptor)."""
    attrs = _attrs(1, "VALID", 1)
    disc.enable(min_cluster_size=1)
    grad = _input_grad(attrs) if op == "input" else _filter_grad(attrs)
    fn = tf.function(grad, input_signature=[tf.TensorSpec([None] * 4, tf.float32)] * 3)
    x, f = _rand((1, 8, 8, 2), 0), _rand((3, 3, 2, 2), 1)
    _close(fn(x, f, _rand((1, 6, 6, 4), 2)), grad(x, f, _rand((1, 6, 6, 4), 2)), 1e-4)
    name = "DepthwiseConv2dNativeBackprop" + op.capitalize()
    for dy in (_rand((1, 5, 6, 4), 3), _rand((2, 6, 6, 4), 4), _rand((1, 6, 6, 3), 5)):
        with pytest.raises(tf.errors.InvalidArgumentError, match=name):
            fn(x, f, dy)
    st = disc.stats()
    assert total(st, "compiles") == 1 and total(st, "fallbacks") == 0, st


@pytest.mark.parametrize("op", ["input", "filter"])
def test_dilated_gradient_stays_with_tf(disc, op):
    """TF 2.21's CPU kernels compute a dilated depthwise gradient as if the
    dilation were 1 (not the gradient of the dilated convolution): the node
    is not clustered, so results stay TF's."""
    attrs = _attrs(1, "SAME", (2, 1))
    grad = _input_grad(attrs) if op == "input" else _filter_grad(attrs)
    fn = tf.function(grad, input_signature=[tf.TensorSpec([None] * 4, tf.float32)] * 3)
    report = disc.explain(fn.get_concrete_function(), min_cluster_size=1)
    (node,) = [n for n in report.not_clustered if n["op"].startswith("DepthwiseConv2dNative")]
    assert "unsupported dtype/attr" in node["reason"], str(report)
    assert "with dilations=[1, 2, 1, 1]" in node["reason"], str(report)


def test_both_gradients_are_window_ops_in_the_executable(disc, tmp_path):
    """The gradients run as our window kinds (not left to TF beside a
    cluster of their Shape ops): the clusters' IR holds one of each."""
    import glob
    attrs = _attrs(2, "SAME", 1)
    disc.enable(min_cluster_size=1, dump_dir=str(tmp_path / "dump"))
    try:
        def fn(x, f, dy):
            return _input_grad(attrs)(x, f, dy), _filter_grad(attrs)(x, f, dy)
        _check(disc, fn, _cases([(2, 9, 7), (1, 4, 4)], (3, 3), 8, 1, attrs))
    finally:
        disc.enable(dump_dir=None)
    irs = glob.glob(str(tmp_path / "dump" / "disc_cluster_*" / "*" / "ir_00_input.mlir"))
    text = "".join(open(ir).read() for ir in irs)
    assert text.count(" window(") == 2, text
    assert '"depthwise_backprop_input"' in text and '"depthwise_backprop_filter"' in text, text
