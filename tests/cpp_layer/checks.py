"""Checks of the C++ layer (op library) with the toy compiler, no real compiler.

Run one check per process (the library's state is process-wide):
    python tests/cpp_layer/checks.py <check-name>      (or "all")
test_cpp_layer.py runs each in a subprocess.
"""
import ctypes
import json
import os
import sys
import tempfile
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2  # noqa: E402

from tf_disc import build_ops  # noqa: E402
from toy_compiler import ToyCompiler  # noqa: E402

F32 = 1
TABLE = {"ops": {op: {"type_attrs": {"T": [F32]}} for op in ("AddV2", "Mul", "Sub")}}


class Lib:
    def __init__(self):
        self.path = build_ops.build(verbose=False)
        tf.load_op_library(self.path)
        self.c = ctypes.CDLL(self.path)
        self.c.DiscGetStats.restype = ctypes.c_int64
        self.c.DiscGetStats.argtypes = [ctypes.c_char_p, ctypes.c_int64]
        self.toy = ToyCompiler(ROOT)

    def setup(self, options=None, table=TABLE, compiler=True):
        assert self.c.DiscSetSupportTable(json.dumps(table).encode()) == 0
        # The self-guard off (as in tests/conftest.py): checks count runs.
        opts = {"enabled": True, "min_cluster_size": 2, "self_guard": False}
        opts.update(options or {})
        assert self.c.DiscSetOptions(json.dumps(opts).encode()) == 0
        self.c.DiscSetCompileCallback(self.toy.callback if compiler else None)

    def stats(self):
        n = self.c.DiscGetStats(None, 0)
        buf = ctypes.create_string_buffer(n + 1)
        assert self.c.DiscGetStats(buf, n + 1) == n
        return json.loads(buf.value.decode())

    def one_cluster(self):
        clusters = self.stats()["clusters"]
        assert len(clusters) == 1, clusters
        return next(iter(clusters.values()))


def rand(shape, seed=0):
    return np.random.RandomState(seed).rand(*shape).astype(np.float32)


def make_fn():
    return tf.function(lambda x, y: (x + y) * y - x,
                       input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)


def ref(x, y):
    return (x + y) * y - x


def tf1_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, None], name="x")
        y = tf.compat.v1.placeholder(tf.float32, [None, None], name="y")
        s = tf.add(x, y, name="s")
        out = tf.subtract(s * y, x, name="out")
    return g, x, y, s, out


def partition_ops(sess, fetches, feed):
    ro = config_pb2.RunOptions(output_partition_graphs=True)
    md = config_pb2.RunMetadata()
    result = sess.run(fetches, feed, options=ro, run_metadata=md)
    return result, [n.op for pg in md.partition_graphs for n in pg.node]


# ---------------------------------------------------------------- checks

def check_tf2_compile_and_cache(lib):
    lib.setup()
    f = make_fn()
    for shape in [(3, 4), (2, 5), (7, 1), (0, 3)]:
        x, y = rand(shape, 1), rand(shape, 2)
        np.testing.assert_allclose(f(x, y).numpy(), ref(x, y), rtol=1e-6)
    c = lib.one_cluster()
    assert c["compiles"] == 1 and c["cache_hits"] == 3 and c["fallbacks"] == 0, c
    assert c["keys"] == ["2,2"], c
    assert lib.stats()["optimizer"]["clusters_created"] >= 1
    assert len(lib.toy.requests) == 1
    req = lib.toy.requests[0]
    assert req["key"] == "2,2" and [i["rank"] for i in req["inputs"]] == [2, 2], req
    # A new rank is a new key.
    np.testing.assert_allclose(f(rand((5,), 1)[None], rand((5,), 2)[None]).numpy(),
                               ref(rand((5,), 1)[None], rand((5,), 2)[None]), rtol=1e-6)


def check_tf1_session_partition_graph(lib):
    lib.setup()
    g, x, y, s, out = tf1_graph()
    with tf.compat.v1.Session(graph=g) as sess:
        xv, yv = rand((3, 4), 1), rand((3, 4), 2)
        # Fetch an inner cluster node too: its name must stay alive.
        (r, rs), ops = partition_ops(sess, [out, s], {x: xv, y: yv})
        assert "DiscLaunch" in ops and "AddV2" not in ops, ops
        np.testing.assert_allclose(r, ref(xv, yv), rtol=1e-6)
        np.testing.assert_allclose(rs, xv + yv, rtol=1e-6)
    assert lib.one_cluster()["compiles"] == 1


def check_tf1_custom_optimizer_by_name(lib):
    lib.setup({"enabled": False})
    g, x, y, s, out = tf1_graph()
    xv, yv = rand((2, 2), 1), rand((2, 2), 2)
    with tf.compat.v1.Session(graph=g) as sess:
        _, ops = partition_ops(sess, out, {x: xv, y: yv})
        assert "DiscLaunch" not in ops, ops  # plugin off when not enabled
    cfg = config_pb2.ConfigProto()
    opt = cfg.graph_options.rewrite_options.custom_optimizers.add()
    opt.name = "DiscOptimizer"
    opt.parameter_map["min_cluster_size"].i = 2
    with tf.compat.v1.Session(graph=g, config=cfg) as sess:
        r, ops = partition_ops(sess, out, {x: xv, y: yv})
        assert "DiscLaunch" in ops, ops
        np.testing.assert_allclose(r, ref(xv, yv), rtol=1e-6)
    # min_cluster_size from parameter_map: 4 > cluster size 3.
    opt.parameter_map["min_cluster_size"].i = 4
    with tf.compat.v1.Session(graph=g, config=cfg) as sess:
        _, ops = partition_ops(sess, out, {x: xv, y: yv})
        assert "DiscLaunch" not in ops, ops


def check_feeds_stay_in_tf(lib):
    lib.setup()
    g, x, y, s, out = tf1_graph()
    with tf.compat.v1.Session(graph=g) as sess:
        xv, yv, sv = rand((2, 3), 1), rand((2, 3), 2), rand((2, 3), 3)
        r, ops = partition_ops(sess, out, {x: xv, y: yv, s: sv})  # feed inner node
        np.testing.assert_allclose(r, sv * yv - xv, rtol=1e-6)


def check_plugin_switch_off(lib):
    lib.setup()
    tf.config.optimizer.set_experimental_options({"use_plugin_optimizers": False})
    f = make_fn()
    x, y = rand((2, 3), 1), rand((2, 3), 2)
    np.testing.assert_allclose(f(x, y).numpy(), ref(x, y), rtol=1e-6)
    assert lib.stats()["clusters"] == {}, lib.stats()


def check_fallback_when_compiler_fails(lib):
    lib.setup()
    lib.toy.fail = True
    f = make_fn()
    for shape in [(3, 4), (2, 2)]:
        x, y = rand(shape, 1), rand(shape, 2)
        np.testing.assert_allclose(f(x, y).numpy(), ref(x, y), rtol=1e-6)
    c = lib.one_cluster()
    assert c["fallbacks"] == 2 and c["compiles"] == 0, c
    assert c["fallback_reasons"] == {"compile failed: toy says no": 2}, c
    assert len(lib.toy.requests) == 1  # a failed key is not retried


def check_fallback_without_compiler(lib):
    lib.setup(compiler=False)
    f = make_fn()
    x, y = rand((3, 4), 1), rand((3, 4), 2)
    np.testing.assert_allclose(f(x, y).numpy(), ref(x, y), rtol=1e-6)
    c = lib.one_cluster()
    assert c["fallback_reasons"] == {"no compiler registered": 1}, c


def check_rank_too_large_falls_back(lib):
    lib.setup()
    f = tf.function(lambda x, y: (x + y) * y - x)
    shape = (1,) * 9
    x, y = rand(shape, 1), rand(shape, 2)
    np.testing.assert_allclose(f(x, y).numpy(), ref(x, y), rtol=1e-6)
    c = lib.one_cluster()
    assert c["fallback_reasons"] == {"rank > 8": 1}, c


def check_threads_single_compile(lib):
    lib.setup()
    lib.toy.sleep_s = 0.5
    f = make_fn()
    errors = []
    barrier = threading.Barrier(8)

    def worker(seed):
        try:
            barrier.wait()
            for i in range(5):
                x, y = rand((seed + 1, i + 1), seed), rand((seed + 1, i + 1), seed + 50)
                np.testing.assert_allclose(f(x, y).numpy(), ref(x, y), rtol=1e-6)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    c = lib.one_cluster()
    assert c["compiles"] == 1 and c["fallbacks"] == 0, c
    assert c["runs"] == 40 and c["cache_hits"] == 39, c
    assert len(lib.toy.requests) == 1


def check_async_compile(lib):
    lib.setup({"async_compile": True})
    lib.toy.sleep_s = 1.0
    f = make_fn()
    x, y = rand((3, 4), 1), rand((3, 4), 2)
    np.testing.assert_allclose(f(x, y).numpy(), ref(x, y), rtol=1e-6)
    c = lib.one_cluster()
    assert c["fallback_reasons"] == {"compiling": 1}, c
    # Wait for the background compile (1 s of toy sleep; longer under load)
    # instead of a fixed sleep: the compile is counted just before its
    # executable is published, hence the short grace after it shows.
    deadline = time.time() + 120
    while lib.one_cluster()["compiles"] < 1 and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    np.testing.assert_allclose(f(x, y).numpy(), ref(x, y), rtol=1e-6)
    c = lib.one_cluster()
    assert c["compiles"] == 1 and c["cache_hits"] == 1, c


def check_compile_timeout(lib):
    lib.setup({"compile_timeout_s": 0.3})
    lib.toy.sleep_s = 1.5
    f = make_fn()
    x, y = rand((3, 4), 1), rand((3, 4), 2)
    start = time.time()
    np.testing.assert_allclose(f(x, y).numpy(), ref(x, y), rtol=1e-6)
    assert time.time() - start < 1.4
    time.sleep(1.5)  # the late result is discarded
    np.testing.assert_allclose(f(x, y).numpy(), ref(x, y), rtol=1e-6)
    c = lib.one_cluster()
    assert c["compiles"] == 0 and c["fallbacks"] == 2, c
    assert list(c["fallback_reasons"]) == ["compile timed out after 0.3 s"], c


def check_clear_cache_uses_disk_cache(lib):
    lib.setup()
    f = make_fn()
    x, y = rand((3, 4), 1), rand((3, 4), 2)
    f(x, y)
    lib.c.DiscClearExecutableCache()
    lib.c.DiscResetStats()
    assert lib.stats()["clusters"] == {}
    np.testing.assert_allclose(f(x, y).numpy(), ref(x, y), rtol=1e-6)
    c = lib.one_cluster()
    assert c["compiles"] == 0 and c["disk_cache_hits"] == 1, c


def check_runtime_error_reported(lib):
    lib.setup()
    # Same rank, different shapes: the toy kernel reports an error, which must
    # surface as a TF error (InvalidArgument) without killing the process.
    f = make_fn()
    try:
        f(rand((2, 3), 1), rand((2, 1), 2))
    except tf.errors.InvalidArgumentError as e:
        assert "toy: shapes differ" in str(e), e
    else:
        raise AssertionError("expected InvalidArgumentError")


def check_control_flow(lib):
    lib.setup()

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
    def cond_fn(x, y):
        a = (x + y) * y
        b = tf.cond(tf.reduce_sum(x) > 0, lambda: (a - x) * y + a, lambda: (a + x) * x - a)
        return b * y + x

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
    def loop_fn(x, y):
        def body(i, acc):
            return i + 1, (acc + y) * y - x
        _, r = tf.while_loop(lambda i, acc: i < 3, body, [tf.constant(0), x])
        return (r + x) * y

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
    def nested_fn(x, y):
        def outer(i, acc):
            def inner(j, a):
                a = (a + y) * y - x
                a = tf.cond(tf.reduce_sum(a) > 0, lambda: a * y - x, lambda: (a + x) * y)
                return j + 1, a
            _, acc = tf.while_loop(lambda j, a: j < 2, inner, [tf.constant(0), acc])
            return i + 1, (acc - y) * x
        _, r = tf.while_loop(lambda i, acc: i < 2, outer, [tf.constant(0), x])
        return r

    def np_nested(x, y):
        acc = x
        for _ in range(2):
            for _ in range(2):
                acc = (acc + y) * y - x
                acc = acc * y - x if acc.sum() > 0 else (acc + x) * y
            acc = (acc - y) * x
        return acc

    def np_cond(x, y):
        a = (x + y) * y
        b = (a - x) * y + a if x.sum() > 0 else (a + x) * x - a
        return b * y + x

    def np_loop(x, y):
        acc = x
        for _ in range(3):
            acc = (acc + y) * y - x
        return (acc + x) * y

    for sign in (1, -1):
        x, y = sign * rand((3, 4), 1), rand((3, 4), 2)
        np.testing.assert_allclose(cond_fn(x, y).numpy(), np_cond(x, y), rtol=1e-5)
        np.testing.assert_allclose(loop_fn(x, y).numpy(), np_loop(x, y), rtol=1e-5)
        np.testing.assert_allclose(nested_fn(x, y).numpy(), np_nested(x, y), rtol=1e-4)
    stats = lib.stats()
    assert stats["optimizer"]["clusters_created"] >= 6, stats
    assert sum(c["fallbacks"] for c in stats["clusters"].values()) == 0, stats


def check_no_cycle_through_outside_node(lib):
    lib.setup()
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
        y = tf.compat.v1.placeholder(tf.float32, [None], name="y")
        a = (x * y) + x           # cluster 1: mul, add
        s = tf.sin(a)             # not clusterable: a -> sin -> b
        b = a * s                 # a -> b directly too: merging a, b would be a cycle
        out = (b + x) - s         # cluster 2: mul_1, add_1, sub
    with tf.compat.v1.Session(graph=g) as sess:
        xv, yv = rand((5,), 3), rand((5,), 4)
        r, ops = partition_ops(sess, out, {x: xv, y: yv})
    av = xv * yv + xv
    np.testing.assert_allclose(r, av * np.sin(av) + xv - np.sin(av), rtol=1e-5)
    assert ops.count("DiscLaunch") == 2 and "Sin" in ops, ops
    assert lib.stats()["optimizer"]["nodes_clustered"] == 5, lib.stats()


def check_const_args_in_key(lib):
    table = {"ops": {"AddV2": {"type_attrs": {"T": [F32]}},
                     "Reshape": {"type_attrs": {"T": [F32]}, "const_inputs": [1]}}}
    lib.setup(table=table)
    f = tf.function(lambda x, shape: tf.reshape(x + x, shape) + 1.0,
                    input_signature=[tf.TensorSpec([None], tf.float32),
                                     tf.TensorSpec([2], tf.int32)])
    x = rand((6,), 1)
    for shape in ([2, 3], [3, 2], [2, 3]):
        np.testing.assert_allclose(f(x, shape).numpy(), np.reshape(x + x, shape) + 1,
                                   rtol=1e-6)
    c = lib.one_cluster()
    # The toy compiler cannot build Reshape: each key is asked once, then falls back.
    # Args: x, shape, the constant 1.0 (Const is not in the table).
    assert sorted(c["keys"]) == ["1,1,0|1=[2,3]", "1,1,0|1=[3,2]"], c
    assert len(lib.toy.requests) == 2, lib.toy.requests
    consts = [[i["value"] for i in r["inputs"] if i["value"] is not None]
              for r in lib.toy.requests]
    assert consts == [[[2, 3]], [[3, 2]]], lib.toy.requests
    assert c["fallbacks"] == 3, c


def check_fused_ops_expanded(lib):
    table = {"ops": {op: {"type_attrs": {"T": [F32]}}
                     for op in ("AddV2", "Mul", "Neg", "Exp", "Tanh", "Sigmoid")}}
    lib.setup(table=table)
    # tanh(exp(-x)) becomes _UnaryOpsComposition; x * sigmoid(x) may become
    # _MklSwish (oneDNN remapper).
    f = tf.function(lambda x, y: tf.tanh(tf.exp(-x)) * y + x * tf.sigmoid(x),
                    input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
    x, y = rand((3, 4), 1), rand((3, 4), 2)
    np.testing.assert_allclose(f(x, y).numpy(),
                               np.tanh(np.exp(-x)) * y + x / (1 + np.exp(-x)), rtol=1e-5)
    c = lib.one_cluster()
    assert c["compiles"] == 1 and c["fallbacks"] == 0, c
    assert lib.stats()["optimizer"]["nodes_clustered"] == 7, lib.stats()


def check_multi_output_node_fetched(lib):
    table = {"ops": {"AddV2": {"type_attrs": {"T": [F32]}},
                     "Split": {"type_attrs": {"T": [F32]}, "const_inputs": [0]},
                     "Mul": {"type_attrs": {"T": [F32]}}}}
    lib.setup(table=table)
    lib.toy.fail = True  # the toy cannot do Split: exercise the TF fallback
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, None], name="x")
        a, b = tf.split(x + x, 2, axis=1, name="split")
        out = a * b
    with tf.compat.v1.Session(graph=g) as sess:
        xv = rand((3, 4), 1)
        (ra, rb, ro), ops = partition_ops(sess, ["split:0", "split:1", out], {x: xv})
    assert "DiscLaunch" in ops and "IdentityN" in ops, ops
    np.testing.assert_allclose(ra, 2 * xv[:, :2], rtol=1e-6)
    np.testing.assert_allclose(rb, 2 * xv[:, 2:], rtol=1e-6)
    np.testing.assert_allclose(ro, 4 * xv[:, :2] * xv[:, 2:], rtol=1e-6)


def check_dump_dir(lib):
    d = tempfile.mkdtemp()
    lib.setup({"dump_dir": d})
    f = make_fn()
    f(rand((2, 2)), rand((2, 2)))
    files = os.listdir(os.path.join(d, "grappler"))
    assert any(n.endswith("_before.pbtxt") for n in files), files
    assert any(n.endswith("_after.pbtxt") for n in files), files


def check_bridge_json(lib):
    c = lib.c
    assert c.DiscSetOptions(b"{bad") == -1
    assert c.DiscSetOptions(b'{"enabled": 3}') == -1
    assert c.DiscSetOptions(b'{"unknown": 1, "compile_timeout_s": 5.5}') == 0
    assert c.DiscSetSupportTable(b'{"ops": {"Mul": 3}}') == -1
    assert c.DiscSetSupportTable(b'[1, 2]') == -1
    assert c.DiscSetSupportTable(
        b'{"ops": {"Mul": {"type_attrs": {"T": [1]}, "attr_values": {"x": ["a\\u00e9", 1, true]},'
        b' "const_inputs": [1]}}}') == 0
    buf = ctypes.create_string_buffer(4)
    n = c.DiscGetStats(buf, 4)
    assert n > 4 and len(buf.value) == 3


def _refused_library(lib, source: str) -> list:
    """The fallback reasons after a call whose compile returned a library
    built from C `source` (which the loader must refuse)."""
    lib.setup()
    bad = os.path.join(tempfile.mkdtemp(), "bad.so")
    src = bad[:-3] + ".c"
    with open(src, "w") as fh:
        fh.write(source)
    import subprocess
    subprocess.run(["gcc", "-shared", "-fPIC", src, "-o", bad], check=True)
    lib.toy._compile = lambda fdef: {"ok": True, "path": bad, "compiled": True, "seconds": 0}
    f = make_fn()
    x, y = rand((3, 4), 1), rand((3, 4), 2)
    np.testing.assert_allclose(f(x, y).numpy(), ref(x, y), rtol=1e-6)
    return list(lib.one_cluster()["fallback_reasons"])


def check_abi_mismatch_falls_back(lib):
    reasons = _refused_library(lib, "int disc_abi_version(void) { return 99; }\n")
    assert reasons == ["load failed: ABI version mismatch: library has 99, "
                       f"runtime expects {_runtime_abi_version()}"], reasons


def check_device_mismatch_falls_back(lib):
    """A library whose code runs on another device (disc_device() 1, CUDA)
    is refused by the CPU DiscLaunch, which runs the cluster in TF."""
    v = _runtime_abi_version()
    reasons = _refused_library(lib, f"int disc_abi_version(void) {{ return {v}; }}\n"
                                    "int disc_device(void) { return 1; }\n")
    assert len(reasons) == 1 and reasons[0].startswith(
        "load failed: device mismatch: library runs on device 1, caller runs device 0"), reasons


def _runtime_abi_version() -> int:
    """DISC_ABI_VERSION as the runtime header defines it (not a copy that goes stale)."""
    import re
    header = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                          "tf_disc", "runtime", "disc_abi.h")
    with open(header) as fh:
        return int(re.search(r"#define DISC_ABI_VERSION (\d+)", fh.read()).group(1))


CHECKS = {name[len("check_"):]: fn for name, fn in sorted(globals().items())
          if name.startswith("check_")}


def main():
    names = sys.argv[1:] or ["all"]
    if names == ["all"]:
        names = list(CHECKS)
    lib = Lib()
    for name in names:
        CHECKS[name](lib)
        print("ok", name)


if __name__ == "__main__":
    main()
