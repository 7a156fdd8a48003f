"""Conv2DBackpropInput / Conv2DBackpropFilter (ops/nn_conv_grad.py) through
DiscLaunch against stock TF eager: strides, dilations, SAME/VALID/EXPLICIT
padding, odd and 1-sized images, an empty batch, sizes from tf.shape in the
cluster (one compile for every shape) and from a function input (a const
arg: one compile per value), tf.GradientTape of a convolution, and TF's
errors for an out_backprop of the wrong size."""
import contextlib

import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import cluster_stats, total

from .test_conv_pool import _close, _rand

IMAGES = [(1, 1, 1), (2, 8, 8), (1, 5, 7), (3, 9, 4), (1, 13, 11), (0, 6, 6)]
EXPLICIT = [[0, 0], [1, 2], [0, 3], [0, 0]]


@pytest.fixture
def force_col2im(disc):
    """Sets kernel policy conv_transpose_col2im ("off" / "on") for the rest
    of one test."""
    with contextlib.ExitStack() as stack:
        yield lambda value: stack.enter_context(
            disc.kernel_policy(conv_transpose_col2im=value))


def _attrs(strides, padding, dil):
    s, d = (strides, strides) if isinstance(strides, int) else strides, \
        (dil, dil) if isinstance(dil, int) else dil
    explicit = isinstance(padding, list)
    return dict(strides=[1, s[0], s[1], 1], padding="EXPLICIT" if explicit else padding,
                explicit_paddings=sum(padding, []) if explicit else [],
                dilations=[1, d[0], d[1], 1])


def _cases(images, k, cin, cout, attrs, dt=np.float32):
    """(x, filter, out_backprop) with out_backprop shaped as the forward conv's output."""
    out = []
    for i, (n, h, w) in enumerate(images):
        x, f = _rand((n, h, w, cin), i, dt), _rand((*k, cin, cout), 40 + i, dt)
        # (stock Conv2D returns its input's shape for an empty batch)
        fwd = tf.raw_ops.Conv2D(input=np.zeros((1, h, w, cin), dt), filter=f, **attrs)
        out.append([x, f, _rand((n,) + tuple(fwd.shape[1:]), 80 + i, dt)])
    return out


def _check(disc, fn, cases, compiles=1, rtol=1e-4, f64_reference=True):
    """The reference is TF's float64 kernels (Eigen's, exact up to rounding)
    where they exist; dilated and (depthwise) unequal-stride gradients only
    TF's oneDNN float32 kernels do on CPU (f64_reference=False).  oneDNN's
    AVX2 float32 Conv2DBackpropFilter gave wrong rows for a 1x1 stride-2 SAME
    gradient from its 6th call on (AMD EPYC, TF 2.21)."""
    disc.enable(min_cluster_size=1)
    compiled = tf.function(fn, input_signature=[tf.TensorSpec([None] * 4, cases[0][0].dtype)] * 3)
    ref_dt = np.float64 if f64_reference else cases[0][0].dtype
    for x, f, dy in cases:
        got = compiled(x, f, dy)
        want = tf.nest.map_structure(
            lambda t: tf.cast(t, x.dtype),
            fn(*[tf.constant(a.astype(ref_dt)) for a in (x, f, dy)]))
        for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(want)):
            _close(g, w, rtol)
    st = disc.stats()
    assert total(st, "fallbacks") == 0, st
    clusters = cluster_stats(st)
    assert clusters and all(c["runs"] == len(cases) and c["compiles"] == compiles
                            for c in clusters), st


CONFIGS = [((3, 3), 1, "VALID", 1), ((3, 3), 1, "SAME", 1), ((3, 2), 2, "SAME", 1),
           ((2, 3), (1, 2), "VALID", 1), ((1, 1), 2, "SAME", 1), ((3, 3), (2, 1), EXPLICIT, 1),
           ((3, 3), 1, "SAME", (2, 1)), ((2, 2), 3, "VALID", 1), ((5, 4), 2, EXPLICIT, 1),
           ((1, 1), 1, "VALID", 1), ((1, 1), (3, 2), "VALID", 1), ((1, 1), 2, EXPLICIT, 1)]


def _images(k, padding, dil):
    d = (dil, dil) if isinstance(dil, int) else dil
    eff = [(k[a] - 1) * d[a] + 1 for a in range(2)]
    if padding == "SAME":
        return IMAGES
    extra = [sum(padding[1]), sum(padding[2])] if isinstance(padding, list) else [0, 0]
    return [s for s in IMAGES if s[1] + extra[0] >= eff[0] and s[2] + extra[1] >= eff[1]]


@pytest.mark.parametrize("col2im", ["off", "on"])
@pytest.mark.parametrize("k,strides,padding,dil", CONFIGS)
def test_backprop_input(disc, force_col2im, k, strides, padding, dil, col2im):
    """Both algorithms of runtime/cpu/conv_transpose.cc (per-phase convolutions,
    col2im), forced by the kernel policy."""
    force_col2im(col2im)
    attrs = _attrs(strides, padding, dil)

    def fn(x, f, dy):
        return tf.raw_ops.Conv2DBackpropInput(input_sizes=tf.shape(x), filter=f,
                                              out_backprop=dy, **attrs)
    _check(disc, fn, _cases(_images(k, padding, dil), k, 3, 5, attrs), f64_reference=dil == 1)


@pytest.mark.parametrize("k,strides,padding,dil", CONFIGS)
def test_backprop_filter(disc, k, strides, padding, dil):
    attrs = _attrs(strides, padding, dil)

    def fn(x, f, dy):
        return tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=tf.shape(f),
                                               out_backprop=dy, **attrs)
    _check(disc, fn, _cases(_images(k, padding, dil), k, 3, 5, attrs), f64_reference=dil == 1)


@pytest.mark.parametrize("k,strides,padding", [((1, 1), 1, "VALID"), ((1, 1), 2, "SAME"),
                                               ((3, 3), (3, 2), "VALID")])
def test_backprop_input_is_one_conv_transpose(disc, tmp_path, k, strides, padding):
    """A strided gradient is not spaced out with zeros (no pad op): one
    window op of kind conv_transpose (runtime/cpu/conv_transpose.cc)."""
    import glob
    attrs = _attrs(strides, padding, 1)
    disc.enable(min_cluster_size=1, dump_dir=str(tmp_path / "dump"))
    try:
        @tf.function(input_signature=[tf.TensorSpec([None] * 4), tf.TensorSpec([*k, 3, 5]),
                                      tf.TensorSpec([None] * 4)])
        def fn(x, f, dy):
            return tf.raw_ops.Conv2DBackpropInput(input_sizes=tf.shape(x), filter=f,
                                                  out_backprop=dy, **attrs)
        for x, f, dy in _cases(_images(k, padding, 1), k, 3, 5, attrs):
            want = tf.raw_ops.Conv2DBackpropInput(input_sizes=x.shape, filter=f,
                                                  out_backprop=dy, **attrs)
            _close(fn(x, f, dy), want, 1e-4)
    finally:
        disc.enable(dump_dir=None)
    st = disc.stats()
    assert total(st, "fallbacks") == 0 and total(st, "compiles") == 1, st
    (ir,) = glob.glob(str(tmp_path / "dump" / "disc_cluster_*" / "*" / "ir_00_input.mlir"))
    text = open(ir).read()
    assert text.count(" window(") == 1 and '"conv_transpose"' in text, text
    assert " pad(" not in text, text


@pytest.mark.parametrize("col2im", ["off", "on"])
def test_wide_channels_and_f64(disc, force_col2im, col2im):
    force_col2im(col2im)
    attrs = _attrs(2, "SAME", 1)

    def fn(x, f, dy):
        return (tf.raw_ops.Conv2DBackpropInput(input_sizes=tf.shape(x), filter=f,
                                               out_backprop=dy, **attrs),
                tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=tf.shape(f),
                                                out_backprop=dy, **attrs))
    _check(disc, fn, _cases([(2, 17, 15), (1, 6, 9)], (7, 7), 19, 33, attrs))
    disc.reset_stats()
    disc.clear_executable_cache()
    _check(disc, fn, _cases([(1, 6, 5), (2, 3, 3)], (3, 3), 4, 6, attrs, np.float64),
           rtol=1e-10)


@pytest.mark.parametrize("strides,padding", [(1, "VALID"), (1, "SAME"), (2, "SAME")])
def test_backprop_input_default_algorithm_64_channels(disc, strides, padding):
    """64 output channels and whole images per thread, the policy "auto":
    runtime/cpu/conv_transpose.cc's own pick (col2im for VALID 6x6 at stride 1,
    whose output has 2.25x the gradient's pixels, and at stride 2; the
    per-phase convolution for SAME at stride 1), for every image size."""
    attrs = _attrs(strides, padding, 1)

    def fn(x, f, dy):
        return tf.raw_ops.Conv2DBackpropInput(input_sizes=tf.shape(x), filter=f,
                                              out_backprop=dy, **attrs)
    _check(disc, fn, _cases([(4, 6, 6), (2, 9, 7), (1, 5, 5)], (3, 3), 64, 7, attrs))


@pytest.mark.parametrize("strides,padding", [(1, "VALID"), (2, "SAME")])
def test_backprop_input_col2im_many_panels(disc, force_col2im, strides, padding):
    """Images of several col2im panels each (the last one partial), the
    gradient's 37 channels not a multiple of the packed kernel's 16 lanes:
    runtime/cpu/conv_transpose.cc's panel product on rows from mid-image."""
    force_col2im("on")
    attrs = _attrs(strides, padding, 1)

    def fn(x, f, dy):
        return tf.raw_ops.Conv2DBackpropInput(input_sizes=tf.shape(x), filter=f,
                                              out_backprop=dy, **attrs)
    _check(disc, fn, _cases([(3, 33, 31), (1, 20, 45)], (3, 3), 70, 37, attrs))


def test_gradient_tape_of_a_conv_net(disc):
    """tf.GradientTape's own graph (sizes from ShapeN) is one cluster,
    compiled once for every shape."""
    def fn(x, f, w):
        with tf.GradientTape() as tape:
            tape.watch([x, f])
            y = tf.nn.relu(tf.nn.conv2d(x, f, 2, "SAME"))
        return tape.gradient(y, [x, f], output_gradients=w)
    cases = []
    for i, (n, h, w) in enumerate([(1, 8, 8), (2, 9, 5), (3, 4, 12)]):
        x, f = _rand((n, h, w, 3), i), _rand((3, 3, 3, 4), 10 + i)
        cases.append([x, f, _rand((n, (h + 1) // 2, (w + 1) // 2, 4), 20 + i)])
    _check(disc, fn, cases)
    assert len(cluster_stats(disc.stats())) == 1


def test_sizes_from_a_function_input_are_a_const_arg(disc):
    """input_sizes fed from outside the cluster: its value keys the cache."""
    attrs = _attrs(1, "VALID", 1)
    disc.enable(min_cluster_size=1)

    @tf.function(input_signature=[tf.TensorSpec([4], tf.int32),
                                  tf.TensorSpec([3, 3, 1, 8], tf.float32),
                                  tf.TensorSpec([None, 6, 6, 8], tf.float32)])
    def fn(sizes, f, dy):
        return tf.raw_ops.Conv2DBackpropInput(input_sizes=sizes, filter=f, out_backprop=dy,
                                              **attrs)
    f = _rand((3, 3, 1, 8), 1)
    for n in (2, 3, 2, 3):
        dy = _rand((n, 6, 6, 8), n)
        want = tf.raw_ops.Conv2DBackpropInput(input_sizes=[n, 8, 8, 1], filter=f,
                                              out_backprop=dy, **attrs)
        _close(fn(tf.constant([n, 8, 8, 1]), f, dy), want, 1e-4)
    st = disc.stats()
    assert total(st, "fallbacks") == 0 and total(st, "compiles") == 2, st


@pytest.mark.parametrize("op", ["input", "filter"])
def test_wrong_out_backprop_size_is_invalid_argument(disc, op):
    attrs = _attrs(1, "VALID", 1)
    disc.enable(min_cluster_size=1)

    @tf.function(input_signature=[tf.TensorSpec([None] * 4, tf.float32)] * 3)
    def fn(x, f, dy):
        if op == "input":
            return tf.raw_ops.Conv2DBackpropInput(input_sizes=tf.shape(x), filter=f,
                                                  out_backprop=dy, **attrs)
        return tf.raw_ops.Conv2DBackpropFilter(input=x, filter_sizes=tf.shape(f),
                                               out_backprop=dy, **attrs)
    x, f = _rand((1, 8, 8, 2), 0), _rand((3, 3, 2, 4), 1)
    fn(x, f, _rand((1, 6, 6, 4), 2))
    name = "Conv2DBackpropInput" if op == "input" else "Conv2DBackpropFilter"
    for dy in (_rand((1, 5, 6, 4), 3), _rand((2, 6, 6, 4), 4), _rand((1, 6, 6, 3), 5)):
        with pytest.raises(tf.errors.InvalidArgumentError, match=name):
            fn(x, f, dy)
    st = disc.stats()
    assert total(st, "compiles") == 1 and total(st, "fallbacks") == 0, st
