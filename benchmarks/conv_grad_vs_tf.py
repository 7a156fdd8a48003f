"""blade_disc_tf's Conv2DBackpropInput / Conv2DBackpropFilter (ops/nn_conv_grad.py:
runtime/cpu/conv_transpose.cc and runtime/cpu/conv_filter_grad.cc) and the depthwise
gradients (runtime/cpu/depthwise_grad.cc: rows dw_input / dw_filter, MobileNetV2
training layers, 3x3) versus stock TF's kernels, at ResNet-like
gradient shapes, sizes from tf.shape in the cluster (one compile per op);
the filter's shape is known (a weight), images are dynamic.

Both run the same tf.function body in one process, interleaved (medians):
stock TF is traced and optimized before blade_disc_tf is enabled.

    python benchmarks/conv_grad_vs_tf.py [--repeats 9] [--match "input 32x14"]
                                         [--clock cpu] [--threads 1]
                                         [--ab conv_transpose_col2im=on]

--clock cpu times process CPU time (all threads) instead of wall time:
steadier on a shared machine, for A/B runs of the kernels' paths
(kernel policy conv_transpose_col2im off / on).  --threads N sets
TF's intra-op pool (which both stock TF and blade_disc_tf run on) to N
threads: --threads 1 compares the kernels' single-core efficiency, which
the other jobs on a shared machine disturb least.  --ab NAME=VALUE also
times blade_disc_tf with that kernel policy field set (disc.kernel_policy),
interleaved with the other two: an A/B of a kernel's algorithms under the
same machine load (column ab/tf).

The last three shapes are ResNet-50 training layers (batch 8): the 3x3 64
at 56x56, the 1x1 256->64 at 56x56 and the strided 3x3 128 (56 -> 28).
"""
import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from timing import interleaved_medians, print_table  # noqa: E402

# (batch, image, in_c, out_c, kernel, stride, padding)
SHAPES = [(8, 32, 32, 64, 3, 1, "SAME"), (8, 56, 64, 64, 3, 2, "SAME"),
          (32, 14, 128, 128, 3, 1, "VALID"), (8, 28, 128, 256, 1, 2, "SAME"),
          (8, 56, 64, 64, 3, 1, "SAME"), (8, 56, 256, 64, 1, 1, "SAME"),
          (8, 56, 128, 128, 3, 2, "SAME")]
# (batch, image, channels, stride) of MobileNetV2's depthwise layers
DEPTHWISE_SHAPES = [(8, 112, 32, 1), (8, 112, 96, 2), (8, 56, 144, 1), (8, 28, 192, 1),
                    (8, 14, 576, 1), (8, 7, 960, 1)]


OPS = {
    "input": lambda x, f, dy, **a: tf.raw_ops.Conv2DBackpropInput(
        input_sizes=tf.shape(x), filter=f, out_backprop=dy, **a),
    "filter": lambda x, f, dy, **a: tf.raw_ops.Conv2DBackpropFilter(
        input=x, filter_sizes=tf.shape(f), out_backprop=dy, **a),
    "dw_input": lambda x, f, dy, **a: tf.raw_ops.DepthwiseConv2dNativeBackpropInput(
        input_sizes=tf.shape(x), filter=f, out_backprop=dy, **a),
    "dw_filter": lambda x, f, dy, **a: tf.raw_ops.DepthwiseConv2dNativeBackpropFilter(
        input=x, filter_sizes=tf.shape(f), out_backprop=dy, **a),
}


def _rows():
    """(op, batch, image, in_c, out_c, kernel, stride, padding) of every row."""
    rows = [(op, *shape) for op in ("input", "filter") for shape in SHAPES]
    return rows + [(op, n, hw, c, c, 3, s, "SAME") for op in ("dw_input", "dw_filter")
                   for n, hw, c, s in DEPTHWISE_SHAPES]


def _label(n: int, hw: int, cin: int, cout: int, k: int, s: int, pad: str) -> str:
    return f"{n}x{hw}x{hw}x{cin}->{cout} k{k}/{s} {pad}"


def body(op: str, stride: int, padding: str):
    return lambda x, f, dy: OPS[op](x, f, dy, strides=[1, stride, stride, 1], padding=padding)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--match", default="",
                        help="only rows whose 'op shape' text contains this")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--threads", type=int, default=0,
                        help="TF's intra-op threads (0: TF's default)")
    parser.add_argument("--ab", default="",
                        help="NAME=VALUE: also time ours with this kernel policy field "
                             "(e.g. conv_transpose_col2im=on)")
    args = parser.parse_args()
    from blade_disc_tf.kernel_policy import parse_kernel_policy_setting

    ab = dict([parse_kernel_policy_setting(args.ab)]) if args.ab else {}
    if args.threads > 0:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    rng = np.random.default_rng(0)
    cases = []
    for op, n, hw, cin, cout, k, s, pad in _rows():
        if args.match not in f"{op} {_label(n, hw, cin, cout, k, s, pad)}":
            continue
        depthwise = op.startswith("dw_")
        x = tf.constant(rng.standard_normal((n, hw, hw, cin)).astype(np.float32))
        f = tf.constant(rng.standard_normal((k, k, cin, 1 if depthwise else cout))
                        .astype(np.float32))
        y = (tf.nn.depthwise_conv2d(x, f, [1, s, s, 1], pad) if depthwise
             else tf.nn.conv2d(x, f, s, pad))
        dy = tf.constant(rng.standard_normal(y.shape).astype(np.float32))
        sig = [tf.TensorSpec([None] * 4), tf.TensorSpec(f.shape), tf.TensorSpec([None] * 4)]
        stock = tf.function(body(op, s, pad), input_signature=sig)
        stock(x, f, dy)  # optimized before disc is enabled
        cases.append((op, n, hw, cin, cout, k, s, pad, sig, stock, x, f, dy))

    import blade_disc_tf as disc
    disc.enable(min_cluster_size=1, self_guard=False, async_compile=False)
    rows, ratios = [], []
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    for op, n, hw, cin, cout, k, s, pad, sig, stock, x, f, dy in cases:
        ours = tf.function(body(op, s, pad), input_signature=sig)
        got, want = ours(x, f, dy).numpy(), stock(x, f, dy).numpy()
        err = float(np.abs(got - want).max() / max(1.0, np.abs(want).max()))
        modes = {"tf": lambda: stock(x, f, dy), "disc": lambda: ours(x, f, dy)}
        if args.ab:
            modes["ab"] = disc.kernel_policy(**ab)(lambda: ours(x, f, dy))
        med = interleaved_medians(modes, args.repeats, clock=clock)
        ratios.append(med["disc"] / med["tf"])
        rows.append({"op": op, "shape": _label(n, hw, cin, cout, k, s, pad),
                     "tf_ms": med["tf"] * 1e3, "disc_ms": med["disc"] * 1e3,
                     "disc/tf time": ratios[-1], "max_rel_err": err})
        if args.ab:
            rows[-1]["ab/tf time"] = med["ab"] / med["tf"]
    print_table(f"Conv2D and depthwise gradients, medians ({args.clock} time)", rows)
    clusters = disc.stats()["clusters"].values()
    gmean = float(np.exp(np.mean(np.log(ratios))))
    print(f"\ndisc/tf time: geometric mean {gmean:.3f}, worst {max(ratios):.3f}; "
          f"{len(clusters)} clusters, {sum(c['compiles'] for c in clusters)} compiles, "
          f"{sum(c['fallbacks'] for c in clusters)} fallbacks")

if __name__ == "__main__":
    main()
