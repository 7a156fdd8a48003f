"""Convolution epilogues from elementwise ops (passes/conv_epilogue.py): the
pass on IR snippets (what folds, what must not), and convolutions followed
by batch norm written as arithmetic (Keras 3's BatchNormalization: x * s +
t), a bias add, a residual add and relu / relu6 against stock TF eager over
many shapes
(batch 1 and above, odd sizes, strides, padding, partial channel blocks)
on both convolution paths, one compile per function."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler.ir import parse_func, verify
from blade_disc_tf.compiler.passes.conv_epilogue import fuse_conv_epilogues

from .test_conv_pool import _rand, _run, _spec

_CONV = ('{"dilations": [1,1],"grouped": false,"kind": "conv","ksize": ["1","1"],'
         '"node": "c","op": "Conv2D","padding": "SAME","pads": [0,0,0,0],"strides": [1,1]}')
_T = "f32[s0,s1,s2,s3]"


def _func(body: str, rets: str = "%v5", conv: str = _CONV) -> str:
    return ("func @f(%arg0: f32[s0,s1,s2,s4], %arg1: f32[1,1,s4,s3], %arg2: f32[s3], "
            f"%arg3: f32[s3], %arg4: f32[1], %arg5: {_T}) {{\n"
            f"  %v0 = window(%arg0, %arg1) {conv} : {_T}\n"
            f'  %v1 = broadcast_in_dim(%arg2) {{"broadcast_dimensions": [3]}} : {_T}\n'
            f'  %v3 = broadcast_in_dim(%arg3) {{"broadcast_dimensions": [3]}} : {_T}\n'
            f"{body}\n  return({rets})\n}}")


_CHAIN = (f"  %v2 = multiply(%v1, %v0) : {_T}\n  %v4 = add(%v2, %v3) : {_T}\n"
          f"  %v5 = relu(%v4) : {_T}")


def _windows(f):
    return [(op.operands[2:], op.attrs.get("scale"), op.attrs.get("shift"),
             op.attrs.get("activation")) for op in f.ops if op.name == "window"]


def test_scale_shift_relu_fold_into_the_window():
    f = verify(fuse_conv_epilogues(verify(parse_func(_func(_CHAIN)))))
    (vectors, scale, shift, act), = _windows(f)
    assert [v.name for v in vectors] == ["arg2", "arg3"] and (scale, shift, act) == (
        True, True, "relu")
    assert [op.name for op in f.ops if op.name in ("multiply", "add", "relu")] == []
    assert f.ops[-1].name == "window" and f.ops[-1].result is f.rets[0]


@pytest.mark.parametrize("body,want", [
    (f"  %v4 = add(%v0, %v3) : {_T}\n  %v5 = relu6(%v4) : {_T}", (["arg3"], False, True,
                                                                    "relu6")),
    (f"  %v2 = multiply(%v0, %v1) : {_T}\n  %v5 = add(%v2, %v2) : {_T}", (["arg2"], True, False,
                                                                           "none")),
    (f"  %v5 = relu(%v0) : {_T}", ([], False, False, "relu")),
])
def test_partial_chains(body, want):
    f = verify(fuse_conv_epilogues(verify(parse_func(_func(body)))))
    (vectors, *rest), = _windows(f)
    assert ([v.name for v in vectors], *rest) == want


@pytest.mark.parametrize("body,rets", [
    (_CHAIN, "%v5, %v0"),  # the convolution's own result is returned
    (f"  %v2 = multiply(%v1, %v0) : {_T}\n  %v4 = add(%v2, %v3) : {_T}\n"
     f"  %v5 = add(%v0, %v4) : {_T}", "%v5"),  # the convolution has two readers
    (f'  %v6 = broadcast_in_dim(%arg4) {{"broadcast_dimensions": [3]}} : {_T}\n'
     f"  %v5 = multiply(%v6, %v0) : {_T}", "%v5"),  # a [1] vector, not [C]
    (f"  %v5 = multiply(%v0, %v0) : {_T}", "%v5"),  # no per-channel operand
])
def test_chains_that_must_not_fold(body, rets):
    f = verify(parse_func(_func(body, rets)))
    assert fuse_conv_epilogues(f) is f


_RESIDUAL = (f"  %v2 = multiply(%v1, %v0) : {_T}\n  %v6 = add(%v2, %arg5) : {_T}\n"
             f"  %v4 = add(%v3, %v6) : {_T}\n  %v5 = relu(%v4) : {_T}")


def test_residual_and_shift_fold_into_the_window():
    """scale, then the residual and the shift in either order, then relu:
    operands in codegen's order (scale, shift, residual)."""
    for body in (_RESIDUAL, _RESIDUAL.replace("add(%v2, %arg5)", "add(%arg5, %v2)")):
        f = verify(fuse_conv_epilogues(verify(parse_func(_func(body)))))
        (window,) = [op for op in f.ops if op.name == "window"]
        assert [v.name for v in window.operands] == ["arg0", "arg1", "arg2", "arg3", "arg5"]
        assert {k: window.attrs[k] for k in ("scale", "shift", "residual", "activation")} == {
            "scale": True, "shift": True, "residual": True, "activation": "relu"}
        assert f.ops[-1] is window and window.result is f.rets[0]


@pytest.mark.parametrize("conv", [_CONV.replace('"conv"', '"depthwise"'),
                                  _CONV.replace('"grouped": false', '"grouped": true')])
def test_no_residual_for_depthwise_or_grouped(conv):
    f = verify(fuse_conv_epilogues(verify(parse_func(_func(_RESIDUAL, conv=conv)))))
    (window,) = [op for op in f.ops if op.name == "window"]
    assert window.attrs["scale"] and not window.attrs["residual"]
    assert window.attrs["activation"] == "none"  # the chain stops at the residual add


def test_two_convolutions_meeting_in_one_add():
    """act(conv0 * s + conv1 * t + shift): the first window takes the add,
    the second stops before it, its result the first one's residual."""
    conv1 = _CONV.replace('"node": "c"', '"node": "d"')
    body = (f"  %v6 = window(%arg0, %arg1) {conv1} : {_T}\n"
            f"  %v7 = multiply(%v6, %v3) : {_T}\n  %v2 = multiply(%v1, %v0) : {_T}\n"
            f"  %v8 = add(%v2, %v7) : {_T}\n  %v4 = add(%v8, %v3) : {_T}\n"
            f"  %v5 = relu(%v4) : {_T}")
    f = verify(fuse_conv_epilogues(verify(parse_func(_func(body)))))
    assert [op.name for op in f.ops if op.name != "broadcast_in_dim"] == ["window", "window"]
    first, second = [op for op in f.ops if op.name == "window"]
    assert first.attrs["node"] == "d" and first.attrs["scale"] and not first.attrs["shift"]
    assert [v.name for v in second.operands[2:]] == ["arg2", "arg3", "v7"]
    assert second.attrs["residual"] and second.attrs["activation"] == "relu"


def test_residual_must_be_a_buffer_of_the_result_type():
    body = (f'  %v6 = broadcast_in_dim(%arg4) {{"broadcast_dimensions": [3]}} : {_T}\n'
            f"  %v5 = add(%v0, %v6) : {_T}")
    f = verify(parse_func(_func(body)))
    assert fuse_conv_epilogues(f) is f


def test_chain_stops_at_a_returned_value():
    """An intermediate that is returned ends the chain: it is the window's result."""
    f = verify(fuse_conv_epilogues(verify(parse_func(_func(_CHAIN, "%v5, %v2")))))
    (vectors, *rest), = _windows(f)
    assert ([v.name for v in vectors], *rest) == (["arg2"], True, False, "none")
    assert next(op for op in f.ops if op.name == "window").result is f.rets[1]


def test_window_with_an_epilogue_is_left_alone():
    text = _func(_CHAIN).replace('"ksize"', '"activation": "relu","ksize"')
    f = verify(parse_func(text))
    assert fuse_conv_epilogues(f) is f


def _bn(y, s, t):
    return y * s + t  # Keras 3's BatchNormalization at inference, with s and t folded


@pytest.mark.parametrize("direct", [True, False])
@pytest.mark.parametrize("act", [tf.nn.relu, tf.nn.relu6, None])
@pytest.mark.parametrize("k,strides,padding", [(3, 1, "SAME"), (1, 2, "SAME"),
                                               (3, 2, "VALID"), (1, 1, "VALID")])
def test_arithmetic_batch_norm_after_conv_vs_tf(disc, tmp_path, direct, act, k, strides,
                                                padding):
    """Conv + x * s + t (+ act), conv + bias (+ act) and depthwise + x * s +
    t (+ act), 70 output channels (a partial 64-channel block)."""
    def fn(x, f, d, s, t, b):
        y = _bn(tf.nn.conv2d(x, f, strides, padding), s, t)
        z = tf.nn.conv2d(x, f, strides, padding) + b
        w = _bn(tf.nn.depthwise_conv2d(x, d, [1, strides, strides, 1], padding), s[:6], t[:6])
        return (y, z, w) if act is None else (act(y), act(z), act(w))
    specs = [_spec(4)] * 3 + [_spec(1)] * 3
    # No 0-sized images: stock TF's Conv2D returns its empty input unchanged
    # (shape [0, 5, 5, 6] for 70 output channels), so there is no reference.
    images = [(1, 9, 13), (2, 6, 5), (1, 3, 17), (3, 7, 7), (1, 3, 3), (2, 4, 12)]
    cases = [[_rand((n, h, w, 6), i), _rand((k, k, 6, 70), 10 + i), _rand((k, k, 6, 1), 20 + i),
              _rand((70,), 30 + i), _rand((70,), 40 + i), _rand((70,), 50 + i)]
             for i, (n, h, w) in enumerate(images)]
    with disc.kernel_policy(direct_conv=direct):
        _run(disc, fn, specs, cases)


@pytest.mark.parametrize("direct", [True, False])
@pytest.mark.parametrize("act", [tf.nn.relu, tf.nn.relu6, None])
@pytest.mark.parametrize("cout,k,strides", [(70, 3, 1), (64, 1, 1), (128, 1, 2), (20, 3, 2)])
def test_residual_add_after_conv_vs_tf(disc, direct, act, cout, k, strides):
    """Keras' bottleneck ending, act((conv * s + t) + shortcut), with the
    shortcut an input or another convolution's result; partial channel
    blocks (70, 20) and whole ones (64, 128)."""
    def fn(x, f, g, s, t, r):
        a = _bn(tf.nn.conv2d(x, f, strides, "SAME"), s, t) + r
        short = _bn(tf.nn.conv2d(x, g, strides, "SAME"), t, s)
        b = _bn(tf.nn.conv2d(x * 0.5, f, strides, "SAME"), s, t) + short
        return (a, b) if act is None else (act(a), act(b))
    specs = [_spec(4)] * 3 + [_spec(1)] * 2 + [_spec(4)]
    cases = []
    for i, (n, h, w) in enumerate([(1, 9, 13), (2, 6, 5), (1, 3, 17), (4, 7, 7), (1, 1, 1)]):
        oh, ow = -(-h // strides), -(-w // strides)
        cases.append([_rand((n, h, w, 6), i), _rand((k, k, 6, cout), 10 + i),
                      _rand((1, 1, 6, cout), 20 + i), _rand((cout,), 30 + i),
                      _rand((cout,), 40 + i), _rand((n, oh, ow, cout), 50 + i)])
    with disc.kernel_policy(direct_conv=direct):
        _run(disc, fn, specs, cases)


def test_keras_batch_norm_conv_runs_without_loop_kernels(disc, tmp_path):
    """Keras Conv2D + BatchNormalization + ReLU (inference), then Conv2D +
    BatchNormalization + Add(shortcut) + ReLU: both convolutions carry
    their batch norm, the residual and the relu (no loop kernel left)."""
    import keras
    from keras import layers
    inp = keras.Input((None, None, 5))
    x = layers.Conv2D(24, 3, padding="same", use_bias=False)(inp)
    x = layers.ReLU()(layers.BatchNormalization(epsilon=1.001e-5)(x))
    y = layers.Conv2D(24, 3, padding="same", use_bias=False)(x)
    y = layers.BatchNormalization(epsilon=1.001e-5)(y)
    model = keras.Model(inp, layers.ReLU()(layers.Add()([x, y])))
    rng = np.random.default_rng(0)
    for v in model.variables:
        v.assign(rng.uniform(0.5, 1.5, v.shape).astype(np.float32))
    disc.enable(min_cluster_size=1, dump_dir=str(tmp_path))
    fn = tf.function(lambda x: model(x, training=False),
                     input_signature=[tf.TensorSpec([None, None, None, 5])])
    for i, (n, h, w) in enumerate([(1, 8, 9), (2, 5, 3), (1, 1, 1)]):
        x = _rand((n, h, w, 5), i)
        want = model(x, training=False)
        np.testing.assert_allclose(fn(x), want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
    st = disc.stats()
    assert sum(c["compiles"] for c in st["clusters"].values()) == 1, st
    sources = "".join(p.read_text() for p in tmp_path.rglob("kernel.cc"))
    assert sources.count("w.activation = DISC_ACT_RELU;") == 2 and "w.scale = " in sources
    assert sources.count("w.residual = ") == 1
    final = sorted(tmp_path.rglob("ir_*_assign_buffers.mlir"))[-1].read_text()
    assert "= fusion(" not in final.split("window", 1)[1]  # nothing after the first conv


def test_residual_on_the_fast_math_bf16_convolution(disc):
    """fast_math="bf16" (runtime/cpu/conv_bf16.cc where the CPU has
    AVX512_BF16): relu(conv + r) is relu of the same function's bf16
    convolution plus r, r added in fp32 (70 channels, enough rows for bf16)."""
    rng = np.random.default_rng(0)
    filt = tf.Variable(rng.standard_normal((3, 3, 16, 70)).astype(np.float32))
    x_spec, r_spec = tf.TensorSpec([None, None, None, 16]), tf.TensorSpec([None, None, None, 70])
    disc.set_options(min_cluster_size=1, fast_math="bf16")
    try:
        with disc.kernel_policy(bf16_gemm="on"):
            conv = tf.function(lambda x: tf.nn.conv2d(x, filt, 1, "SAME") * 1.0,
                               input_signature=[x_spec])
            fused = tf.function(lambda x, r: tf.nn.relu(tf.nn.conv2d(x, filt, 1, "SAME") + r),
                                input_signature=[x_spec, r_spec])
            for n, h, w in [(1, 9, 11), (2, 17, 16)]:
                x = rng.standard_normal((n, h, w, 16)).astype(np.float32)
                r = rng.standard_normal((n, h, w, 70)).astype(np.float32)
                want = np.maximum(conv(x).numpy() + r, 0)
                np.testing.assert_allclose(fused(x, r).numpy(), want, rtol=1e-6, atol=1e-6)
    finally:
        disc.set_options(fast_math="", min_cluster_size=2)
