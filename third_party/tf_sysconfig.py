"""Prints, as JSON, what Bazel needs to build against the installed TensorFlow
wheel (run by tf_configure.bzl with the system python; never by the build)."""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

include = tf.sysconfig.get_include()
lib_dir = tf.sysconfig.get_lib()
# -I<include> becomes the headers library's `includes`; keep the rest
# (-D_GLIBCXX_USE_CXX11_ABI=1 --std=c++17 -DEIGEN_MAX_ALIGN_BYTES=64).
copts = [f for f in tf.sysconfig.get_compile_flags() if not f.startswith("-I")]
lib = None
for flag in tf.sysconfig.get_link_flags():
    if flag.startswith("-l:"):
        lib = flag[3:]
    elif flag.startswith("-l"):
        lib = "lib%s.so" % flag[2:]
json.dump({
    "python": os.path.realpath(sys.executable),
    "tf_version": tf.__version__,
    "include_dir": os.path.realpath(include),
    "lib_dir": os.path.realpath(lib_dir),
    "framework_lib": lib or "libtensorflow_framework.so.2",
    "copts": copts,
}, sys.stdout)
