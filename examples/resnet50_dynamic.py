"""A ResNet-50 (random weights, input (None, None, 3)) in a tf.function under
blade_disc_tf, over 20 (batch, image size) shapes: prints the share of
compute ops inside DiscLaunch, compiles per cluster (one each: every size
reuses the same executables) and the largest difference from stock TF.

The default model is examples/cnn_dynamic_common.resnet_like (3-4-6-3
bottleneck blocks, SAME padding); --model ResNet50 runs
keras.applications.ResNet50 (VALID 1x1 convolutions: their filters' dims,
proven by Grappler, compile as constants, so residual Adds see one dim
spelling).

    python examples/resnet50_dynamic.py [--shapes 20] [--model resnet50_like]
"""
import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from cnn_dynamic_common import build_model, coverage, report, run_shapes, shapes  # noqa: E402


def main(model_name: str = "resnet50_like", sizes: tuple = tuple(range(64, 225, 32))) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shapes", type=int, default=20)
    parser.add_argument("--model", default=model_name)
    args = parser.parse_args()
    model_name = args.model
    make = build_model(model_name)
    stock = make()
    stock(tf.zeros([1, 64, 64, 3]))  # optimized by stock Grappler before enable()

    import blade_disc_tf as disc
    disc.enable(async_compile=False)  # the first call compiles: its time is shown
    disc.reset_stats()
    ours = make()
    t0 = time.perf_counter()
    cov = coverage(lambda: ours(tf.zeros([1, 64, 64, 3])))
    print(f"first call (optimize + compile): {time.perf_counter() - t0:.1f} s")
    todo = shapes(args.shapes, (1, 2, 4), sizes)
    t0 = time.perf_counter()
    diff = run_shapes(stock, ours, todo)
    print(f"{len(todo)} shapes (stock TF and ours): {time.perf_counter() - t0:.1f} s")
    stats = disc.stats()
    seconds = sum(c.get("compile_seconds", 0.0) for c in stats.get("clusters", {}).values())
    print(f"compile seconds (all clusters): {seconds:.1f}")
    report(model_name, cov, stats, diff, len(todo) + 1)


if __name__ == "__main__":
    main()
