"""Convolution epilogues from elementwise ops (passes/conv_epilogue.py): the
pass on IR snippets (what folds, what must not), and convolutions followed
by batch norm written as arithmetic (Keras 3's BatchNormalization: x * s +
t), a bias add and relu / relu6 against stock TF eager over many shapes
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


def _func(body: str, rets: str = "%v5") -> str:
    return ("func @f(%arg0: f32[s0,s1,s2,s4], %arg1: f32[1,1,s4,s3], %arg2: f32[s3], "
            f"%arg3: f32[s3], %arg4: f32[1]) {{\n"
            f"  %v0 = window(%arg0, %arg1) {_CONV} : {_T}\n"
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


def test_keras_batch_norm_conv_runs_without_loop_kernels(disc, tmp_path):
    """Keras Conv2D + BatchNormalization + ReLU (inference) twice: both
    convolutions carry the batch norm and relu (no loop kernel left)."""
    import keras
    from keras import layers
    inp = keras.Input((None, None, 5))
    x = inp
    for _ in range(2):
        x = layers.Conv2D(24, 3, padding="same", use_bias=False)(x)
        x = layers.BatchNormalization(epsilon=1.001e-5)(x)
        x = layers.ReLU()(x)
    model = keras.Model(inp, x)
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
    final = sorted(tmp_path.rglob("ir_*_assign_buffers.mlir"))[-1].read_text()
    assert "= fusion(" not in final.split("window", 1)[1]  # nothing after the first conv
