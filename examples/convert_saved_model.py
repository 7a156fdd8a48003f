"""Deploying without the compiler: convert a SavedModel ahead of time, then
serve it in a process that loads only the op library.

1. Exports a small Keras model (dynamic batch and feature-map size).
2. `disc.convert_saved_model` clusters its signatures, compiles every cluster
   once for the signature's ranks and embeds the executables (the same as
   `python -m blade_disc_tf convert SRC DST`).
3. A fresh Python process, as a model server would, loads the converted
   model with only `disc.load_ops()`: no compile, outputs equal to stock TF
   for every shape.  Prints its counters and the largest difference.
For timings (conversion, size, load, first request) see
benchmarks/serving_conversion.py."""
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SERVE = r'''
import sys, numpy as np, tensorflow as tf, blade_disc_tf as disc
disc.load_ops()                       # DiscLaunch only: no compiler attached
original, converted = (tf.saved_model.load(p).signatures["serving_default"]
                       for p in sys.argv[1:3])
rng, worst = np.random.default_rng(0), 0.0
for shape in [(1, 8, 8, 3), (4, 17, 9, 3), (2, 32, 32, 3), (3, 5, 40, 3)]:
    x = tf.constant(rng.standard_normal(shape).astype(np.float32))
    a, b = original(inputs=x), converted(inputs=x)
    worst = max(worst, max(float(np.abs(a[k] - b[k]).max()) for k in a))
for name, c in disc.stats()["clusters"].items():
    print(f"  {name}: runs={c['runs']} compiles={c['compiles']} "
          f"embedded hits={c['cache_hits']} fallbacks={c['fallbacks']}")
print(f"  largest difference from stock TF: {worst:.2e}")
'''


def main() -> None:
    import keras

    import blade_disc_tf as disc

    work = tempfile.mkdtemp(prefix="disc_convert_example_")
    src, dst = os.path.join(work, "model"), os.path.join(work, "model_disc")
    inp = keras.Input((None, None, 3), name="inputs")
    x = keras.layers.Conv2D(8, 3, padding="same")(inp)
    x = keras.layers.Activation("gelu")(x * 0.5 + 0.25)
    x = keras.layers.GlobalAveragePooling2D()(x)
    keras.Model(inp, keras.layers.Dense(4, activation="softmax")(x)).export(src, verbose=False)

    disc.convert_saved_model(src, dst, progress=print)
    print("serving the converted model in a fresh process (op library only):")
    subprocess.run([sys.executable, "-c", SERVE, src, dst], check=True)


if __name__ == "__main__":
    main()
