"""QuantizeV2/Dequantize (qint8, SCALED) against stock TF: per-tensor and
per-channel ranges over several shapes, range edge cases (all-negative,
all-positive, tiny, equal) and both round modes."""
import numpy as np
import pytest
import tensorflow as tf

from .opwalk import assert_close


def run(compiler, fn, specs, inputs):
    """run_against_tf, reading qint8 outputs (a numpy record type) as int8."""
    exe, out_dt = compiler.executable(fn, specs)
    got = exe(inputs, out_dt)
    want = fn(*[tf.constant(x) for x in inputs])
    for k, (g, w) in enumerate(zip(got, want)):
        g = g.view(np.int8) if g.dtype.names else g
        assert_close(g, w.numpy(), f"{fn.__name__} output {k} on {inputs[1:]}")

RANGES = [(-255.0, 127.0), (0.0, 255.0), (-1.0, 1.0), (3.0, 5.0), (-500.0, -3.0),
          (0.0, 0.0), (-1e-4, 1e-4)]


def _x(rng, shape):
    x = (rng.standard_normal(shape) * 100).astype(np.float32)
    flat = x.reshape(-1)
    flat[:8] = [0.5, -0.5, 1.5, -1.5, 2.5, 0.0, 500.0, -500.0][:flat.size]
    return x


@pytest.mark.parametrize("round_mode", ["HALF_AWAY_FROM_ZERO", "HALF_TO_EVEN"])
@pytest.mark.parametrize("narrow", [False, True])
def test_quantize_dequantize_per_tensor(compiler, round_mode, narrow):
    def fn(x, lo, hi):
        q = tf.raw_ops.QuantizeV2(input=x, min_range=lo, max_range=hi, T=tf.qint8,
                                  mode="SCALED", round_mode=round_mode, narrow_range=narrow)
        d = tf.raw_ops.Dequantize(input=q.output, min_range=q.output_min,
                                  max_range=q.output_max, mode="SCALED", narrow_range=narrow)
        return [q.output, q.output_min, q.output_max, d]
    fn.__name__ = f"quant_{round_mode}_{narrow}"
    rng = np.random.default_rng(1)
    specs = [tf.TensorSpec([None, None], tf.float32), tf.TensorSpec([], tf.float32),
             tf.TensorSpec([], tf.float32)]
    for lo, hi in RANGES:
        for shape in [(2, 7), (1, 1), (5, 33)]:  # TF's Dequantize aborts on empty input
            run(compiler, fn, specs, [_x(rng, shape), np.float32(lo), np.float32(hi)])


def test_quantize_dequantize_per_channel(compiler):
    def fn(x, lo, hi):
        q = tf.raw_ops.QuantizeV2(input=x, min_range=lo, max_range=hi, T=tf.qint8,
                                  mode="SCALED", axis=1)
        d = tf.raw_ops.Dequantize(input=q.output, min_range=lo, max_range=hi,
                                  mode="SCALED", axis=1)
        return [q.output, q.output_min, q.output_max, d]
    rng = np.random.default_rng(2)
    specs = [tf.TensorSpec([None] * 4, tf.float32), tf.TensorSpec([None], tf.float32),
             tf.TensorSpec([None], tf.float32)]
    for shape in [(2, 3, 4, 5), (1, 7, 1, 2), (3, 2, 3, 1)]:
        c = shape[1]
        pick = [RANGES[i % len(RANGES)] for i in range(c)]
        lo = np.asarray([p[0] for p in pick], np.float32)
        hi = np.asarray([p[1] for p in pick], np.float32)
        run(compiler, fn, specs, [_x(rng, shape), lo, hi])


def test_quantize_min_first(compiler):
    def fn(x, lo, hi):
        q = tf.raw_ops.QuantizeV2(input=x, min_range=lo, max_range=hi, T=tf.qint8,
                                  mode="MIN_FIRST")
        return [q.output, q.output_min, q.output_max]
    rng = np.random.default_rng(3)
    specs = [tf.TensorSpec([None, None], tf.float32), tf.TensorSpec([], tf.float32),
             tf.TensorSpec([], tf.float32)]
    for lo, hi in RANGES + [(0.0, 255.0), (-3.0, 1e6)]:
        for shape in [(2, 7), (1, 1), (0, 4), (9, 31)]:
            run(compiler, fn, specs, [_x(rng, shape), np.float32(lo), np.float32(hi)])
