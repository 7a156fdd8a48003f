"""blade_disc_tf's convolutions (rt->window: the direct register-tiled kernel
of runtime/cpu/conv_direct.cc with bias/ReLU on its tiles, 1x1s included; direct
depthwise loops) versus stock TF's Conv2D / DepthwiseConv2dNative (oneDNN)
at ResNet-50 and MobileNetV2 layer shapes.

Both run the same tf.function body (conv + bias + relu, which Grappler's
remapper turns into _FusedConv2D for TF and we cluster) in one process,
interleaved (medians): stock TF is traced and optimized before
blade_disc_tf is enabled.

    python benchmarks/conv_vs_tf.py [--repeats 9] [--batch 1 8] [--image 64 224] [--ab]
                                    [--cpu]

--ab also times our convolutions with the direct kernel switched off
(kernel policy direct_conv=False: im2col panels + GEMM, then the epilogue; a 1x1
is a GEMM on the input), interleaved with the other two.

--cpu runs both on one intra-op thread and times the process's CPU time
instead of wall time: on a shared, loaded machine wall-time ratios of the
2-thread runs swing by 10-30% between runs, single-thread CPU-time ratios
by a few percent (the fixed per-call cost counts alike in both).
"""
import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from timing import interleaved_medians, print_table  # noqa: E402

# (name, kernel, stride, in_c, out_c, depthwise, spatial divisor of the image)
LAYERS = [
    ("r50 conv1 7x7/2 3->64", 7, 2, 3, 64, False, 1),
    ("r50 1x1 64->256 @/4", 1, 1, 64, 256, False, 4),
    ("r50 3x3 64->64 @/4", 3, 1, 64, 64, False, 4),
    ("r50 3x3/2 128 @/4", 3, 2, 128, 128, False, 4),
    ("r50 1x1 256->128 @/8", 1, 1, 256, 128, False, 8),
    ("r50 1x1/2 512->1024 @/8", 1, 2, 512, 1024, False, 8),
    ("r50 3x3 512 @/32", 3, 1, 512, 512, False, 32),
    ("mnv2 1x1 32->192 @/4", 1, 1, 32, 192, False, 4),
    ("mnv2 dw 3x3 144 @/4", 3, 1, 144, 144, True, 4),
    ("mnv2 dw 3x3/2 192 @/8", 3, 2, 192, 192, True, 8),
    ("mnv2 dw 3x3 576 @/16", 3, 1, 576, 576, True, 16),
]


def body(stride: int, depthwise: bool):
    def fn(x, f, b):
        if depthwise:
            y = tf.nn.depthwise_conv2d(x, f, [1, stride, stride, 1], "SAME")
        else:
            y = tf.nn.conv2d(x, f, stride, "SAME")
        return tf.nn.relu(tf.nn.bias_add(y, b))
    return fn


def im2col(fn, *args):
    """fn(*args) with the direct convolution kernel switched off (kernel
    policy direct_conv=False)."""
    import blade_disc_tf as disc

    with disc.kernel_policy(direct_conv=False):
        return fn(*args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--image", type=int, nargs="+", default=[64, 224])
    parser.add_argument("--only", default="", help="substring of layer names to run")
    parser.add_argument("--ab", action="store_true",
                        help="also time ours with kernel policy direct_conv=False "
                             "(im2col + GEMM)")
    parser.add_argument("--cpu", action="store_true",
                        help="one intra-op thread, process CPU time instead of wall time")
    args = parser.parse_args()
    if args.cpu:  # before the first op initializes the thread pools
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    clock = time.process_time if args.cpu else time.perf_counter
    rng = np.random.default_rng(0)
    sig = [tf.TensorSpec([None] * 4, tf.float32), tf.TensorSpec([None] * 4, tf.float32),
           tf.TensorSpec([None], tf.float32)]
    cases = []
    for name, k, s, cin, cout, dw, div in LAYERS:
        if args.only not in name:
            continue
        stock = tf.function(body(s, dw), input_signature=sig)
        for batch in args.batch:
            for image in args.image:
                hw = max(1, image // div)
                x = tf.constant(rng.standard_normal((batch, hw, hw, cin)).astype(np.float32))
                f = tf.constant((rng.standard_normal((k, k, cin, 1 if dw else cout))
                                 / np.sqrt(k * k * cin)).astype(np.float32))
                b = tf.constant(rng.standard_normal(cout).astype(np.float32))
                stock(x, f, b)  # optimized before disc is enabled
                cases.append((name, batch, hw, k, cin, cout, dw, body(s, dw), stock, x, f, b))

    import blade_disc_tf as disc
    disc.enable(min_cluster_size=1, self_guard=False, async_compile=False)
    ours_by_fn = {}
    rows, ratios = [], []
    for name, batch, hw, k, cin, cout, dw, fn, stock, x, f, b in cases:
        ours = ours_by_fn.setdefault(name, tf.function(fn, input_signature=sig))
        t0 = time.perf_counter()
        got = ours(x, f, b).numpy()
        first = time.perf_counter() - t0
        want = stock(x, f, b).numpy()
        err = float(np.abs(got - want).max() / max(1.0, np.abs(want).max()))
        flops = 2.0 * np.prod(got.shape) * k * k * (1 if dw else cin)
        modes = {"tf": lambda: stock(x, f, b), "disc": lambda: ours(x, f, b)}
        if args.ab:
            modes["im2col"] = lambda: im2col(ours, x, f, b)
        med = interleaved_medians(modes, args.repeats, inner=3, clock=clock)
        ratios.append(med["disc"] / med["tf"])
        row = {"layer": name, "batch": batch, "in_hw": hw, "tf_ms": med["tf"] * 1e3,
               "disc_ms": med["disc"] * 1e3, "disc_GF/s": flops / med["disc"] / 1e9,
               "disc/tf time": ratios[-1]}
        if args.ab:
            row["im2col/tf time"] = med["im2col"] / med["tf"]
        rows.append({**row, "first_call_s": first, "max_rel_err": err})
    print_table("Conv + bias + relu medians (ratio < 1.10 is the goal)"
                + (", 1 thread, CPU time" if args.cpu else ""), rows)
    if ratios:
        print(f"\ngeometric mean disc/tf time: {float(np.exp(np.mean(np.log(ratios)))):.3f}"
              f"   worst: {max(ratios):.3f}")
    if args.ab and rows:
        ab = [r["im2col/tf time"] for r in rows]
        print(f"geometric mean im2col/tf time: {float(np.exp(np.mean(np.log(ab)))):.3f}")
    stats = disc.stats()["clusters"]
    print("clusters:", {k[:24]: {c: v[c] for c in ("compiles", "fallbacks")}
                        for k, v in stats.items()})


if __name__ == "__main__":
    main()
