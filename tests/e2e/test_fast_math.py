"""fast_math="bf16": off by default (fp32 results unchanged), the documented
error bound against float64 over many GEMM shapes, and the option as part of
the cache key of every cluster it changes (an executable built with it never
serves a run without it), and of no other cluster.

Bound (README "Fast math"): |C - A B| <= (2^-7 + 2^-15 + k 2^-23) (|A| |B|)."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf import _library, config
from blade_disc_tf.compiler.ir.parser import parse_func
from blade_disc_tf.compiler.passes.fast_math import apply_fast_math
from graph_inspection import total


# The bf16 kernel can run here (this CPU and DISC_MAX_CPU_ISA allow it); the
# tests run it through kernel policy bf16_gemm="on" also where the op library would not
# by default (runtime/cpu/cpu_isa.h Bf16GemmPays: Intel Xeons).
HAS_BF16 = _library.load().stats()["cpu"]["selected"] in ("avx512_bf16", "avx512_amx")
MIN_BF16_ROWS = 16  # gemm_bf16.cc kMinRows: skinnier products keep fp32


@pytest.fixture
def fm(disc):
    """The disc fixture clustering single GEMMs, fast math switched back off
    afterwards."""
    disc.set_options(min_cluster_size=1)
    with disc.kernel_policy(bf16_gemm="on"):
        yield disc
    disc.set_options(fast_math="", min_cluster_size=2)


def _bound(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    return (2.0 ** -7 + 2.0 ** -15 + k * 2.0 ** -23) * (np.abs(a) @ np.abs(b)) + 1e-30


def _rel_err(got, a, b):
    """max |got - A B| / (|A| |B|), in float64."""
    want = a @ b
    return float(np.max(np.abs(got - want) / ((np.abs(a) @ np.abs(b)) + 1e-30)))


def _matmul_fn(transpose_a=False, transpose_b=False):
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
    def f(a, b):
        return tf.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)
    return f


SHAPES = [(1, 1, 1), (1, 7, 33), (1, 300, 64), (3, 17, 5), (16, 16, 16), (16, 31, 1),
          (17, 33, 31), (40, 257, 100), (64, 129, 48), (96, 768, 70), (200, 3, 513),
          (128, 1000, 17), (33, 64, 2049), (20, 1537, 40)]
# (m, k, n): m = 1, odd k (also across the kernel's 768-long k chunks), n % 16 != 0


def _operands(rng, m, k, n, ta, tb):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    return a, b, (a.T.copy() if ta else a), (b.T.copy() if tb else b)


def test_option_off_by_default_and_validated():
    assert config.from_environment({}).fast_math == ""
    assert config.from_environment({"DISC_FAST_MATH": "bf16"}).fast_math == "bf16"
    assert config.from_environment({"DISC_FAST_MATH": "off"}).fast_math == ""
    assert config.from_environment({}).native_json(True)["fast_math"] == ""
    with pytest.raises(ValueError, match="fast_math"):
        config.from_environment({"DISC_FAST_MATH": "fp8"})
    with pytest.raises(ValueError, match="fast_math"):
        config.from_environment({}).replace(fast_math="fp16")


def test_pass_marks_only_float_dots():
    func = parse_func("""func @f(%arg0: f32[s0,8], %arg1: f32[8,s1], %arg2: f64[s0,8], %arg3: f64[8,s1]) {
  %v0 = dot(%arg0, %arg1) {"batch_lhs": [],"batch_rhs": [],"lhs_contract": [1],"lhs_free": [0],"rhs_contract": [0],"rhs_free": [1]} : f32[s0,s1]
  %v1 = dot(%arg2, %arg3) {"batch_lhs": [],"batch_rhs": [],"lhs_contract": [1],"lhs_free": [0],"rhs_contract": [0],"rhs_free": [1]} : f64[s0,s1]
  return(%v0, %v1)
}
""")
    assert apply_fast_math(func, "") is func
    out = apply_fast_math(func, "bf16")
    assert [op.attrs.get("precision") for op in out.ops] == ["bf16", None]
    assert all("precision" not in op.attrs for op in func.ops)  # input untouched
    with pytest.raises(ValueError):
        apply_fast_math(func, "fp8")


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_off_results_are_fp32_and_match_tf(fm, ta, tb):
    disc = fm
    assert disc.options().fast_math == ""
    f = _matmul_fn(ta, tb)
    rng = np.random.default_rng(1)
    for m, k, n in SHAPES:
        a, b, xa, xb = _operands(rng, m, k, n, ta, tb)
        got = f(xa, xb).numpy()
        want = f.python_function(tf.constant(xa), tf.constant(xb)).numpy()
        # fp32 accumulation only: far inside what bf16 rounding would cause.
        assert _rel_err(got.astype(np.float64), a.astype(np.float64), b.astype(np.float64)) \
            <= k * 2.0 ** -23 + 2.0 ** -22, (m, k, n)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(k))
    stats = disc.stats()
    assert total(stats, "compiles") == 1 and total(stats, "fallbacks") == 0, stats
    assert all("fast_math" not in key for c in stats["clusters"].values() for key in c["keys"])


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_bf16_error_within_documented_bound(fm, ta, tb):
    fm.set_options(fast_math="bf16")
    f = _matmul_fn(ta, tb)
    rng = np.random.default_rng(2)
    worst_big = 0.0
    for m, k, n in SHAPES:
        a, b, xa, xb = _operands(rng, m, k, n, ta, tb)
        got = f(xa, xb).numpy().astype(np.float64)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        err = np.abs(got - a64 @ b64)
        bound = _bound(a64, b64, k)
        assert np.all(err <= bound), (m, k, n, float(np.max(err / bound)))
        if m >= MIN_BF16_ROWS:
            worst_big = max(worst_big, _rel_err(got, a64, b64))
    if HAS_BF16:  # the bf16 kernel really ran: errors far above fp32's
        assert worst_big > 2.0 ** -12, worst_big
    else:
        assert worst_big <= 2.0 ** -16, worst_big
    stats = fm.stats()
    assert total(stats, "compiles") == 1 and total(stats, "fallbacks") == 0, stats
    (keys,) = [c["keys"] for c in stats["clusters"].values()]
    assert keys == ["2,2|fast_math=bf16"], keys


def test_batched_attention_shapes_within_bound(fm):
    fm.set_options(fast_math="bf16")

    @tf.function(input_signature=[tf.TensorSpec([None, None, None, 64], tf.float32)] * 2)
    def f(q, k):
        return tf.matmul(q, k, transpose_b=True)

    rng = np.random.default_rng(3)
    for b, h, s in [(1, 2, 1), (2, 3, 17), (3, 4, 40), (1, 12, 129)]:
        q = rng.standard_normal((b, h, s, 64)).astype(np.float32)
        k = rng.standard_normal((b, h, s, 64)).astype(np.float32)
        got = f(q, k).numpy().astype(np.float64)
        q64, kt64 = q.astype(np.float64), np.swapaxes(k, -1, -2).astype(np.float64)
        err = np.abs(got - q64 @ kt64)
        assert np.all(err <= _bound(q64, kt64, 64)), (b, h, s)
    assert total(fm.stats(), "compiles") == 1


def test_batched_wide_and_broadcast_within_bound(fm):
    """Batch entries split into several tasks (operands packed once per
    call), with B per entry and B broadcast over the batch."""
    fm.set_options(fast_math="bf16")

    @tf.function(input_signature=[tf.TensorSpec([None, None, None], tf.float32),
                                  tf.TensorSpec([None, None, None], tf.float32)])
    def f(a, b):
        return tf.matmul(a, b)

    rng = np.random.default_rng(5)
    for batch, bb, m, k, n in [(2, 2, 20, 64, 300), (3, 1, 50, 33, 260), (2, 2, 97, 15, 17)]:
        a = rng.standard_normal((batch, m, k)).astype(np.float32)
        b = rng.standard_normal((bb, k, n)).astype(np.float32)
        got = f(a, b).numpy().astype(np.float64)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        err = np.abs(got - a64 @ b64)
        assert np.all(err <= _bound(a64, b64, k)), (batch, bb, m, k, n)
    assert total(fm.stats(), "fallbacks") == 0


def test_option_is_part_of_every_cache_key(fm):
    """One tf.function, the option flipped between calls: each setting runs
    its own executable, from memory and from the disk cache."""
    f = _matmul_fn()
    rng = np.random.default_rng(4)
    a = rng.standard_normal((64, 96)).astype(np.float32)
    b = rng.standard_normal((96, 80)).astype(np.float32)
    exact = (a.astype(np.float64) @ b.astype(np.float64))

    def run(mode):
        fm.set_options(fast_math=mode)
        return f(a, b).numpy()

    off1, on1, off2, on2 = run(""), run("bf16"), run(""), run("bf16")
    np.testing.assert_array_equal(off1, off2)
    np.testing.assert_array_equal(on1, on2)
    assert np.max(np.abs(off1 - exact)) < 1e-4
    if HAS_BF16:
        assert np.max(np.abs(on1 - exact)) > 1e-3  # bf16 rounding visible
    stats = fm.stats()
    assert total(stats, "compiles") == 2, stats
    (keys,) = [c["keys"] for c in stats["clusters"].values()]
    assert sorted(keys) == ["2,2", "2,2|fast_math=bf16"], keys
    # Fresh memory, compiler forbidden: both come from the disk cache, each
    # from its own library (different generated source).
    fm.clear_executable_cache()
    fm.reset_stats()
    fm.set_options(forbid_compile=True)
    np.testing.assert_array_equal(run("bf16"), on1)
    np.testing.assert_array_equal(run(""), off1)
    stats = fm.stats()
    assert total(stats, "disk_cache_hits") == 2 and total(stats, "fallbacks") == 0, stats


def test_benchmark_quick_runs_all_modes(tmp_path):
    """benchmarks/bf16_fast_math.py --quick: every table printed, ours never
    fell back to TF and its bf16 mode ran bf16 keys (no speed asserted); the
    --ab mode (a kernel policy field set) timed too, with the same results."""
    import os
    import re
    import subprocess
    import sys

    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    env = dict(os.environ, DISC_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, os.path.join(root, "benchmarks", "bf16_fast_math.py"),
                           "--quick", "--ab", "gemm_epilogue_fusion=false"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "FALLBACKS" not in out, out
    keys = re.search(r"model: (\d+) cluster keys with fast_math=bf16", out)
    assert keys and int(keys.group(1)) >= 1, out
    table = out[out.index("GEMM medians"):].splitlines()[2:7]
    assert len(table) == 5 and all(line.split()[-1] == "1" for line in table), out
    assert "bf16 vs stock TF fp32:" in out, out
    ab = re.search(r"ours_bf16_ab .* (\S+)\s*$", out, re.M)
    bf16 = re.search(r"ours_bf16 .* (\S+)\s*$", out, re.M)
    assert ab and bf16 and ab.group(1) == bf16.group(1), out  # max_rel_err_vs_tf
    assert "bf16 vs bf16 with {'gemm_epilogue_fusion': False}:" in out, out


def _elementwise_fn():
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def f(x):
        return tf.tanh(x) * 2.0 + 1.0
    return f


def test_option_leaves_keys_of_clusters_without_a_dot(fm):
    """A cluster with no float dot computes the same with the option: one key
    and one compile for both settings."""
    f = _elementwise_fn()
    x = np.random.default_rng(5).standard_normal((5, 7)).astype(np.float32)
    fm.set_options(fast_math="")
    off = f(x).numpy()
    fm.set_options(fast_math="bf16")
    np.testing.assert_array_equal(f(x).numpy(), off)
    stats = fm.stats()
    assert total(stats, "compiles") == 1 and total(stats, "fallbacks") == 0, stats
    (keys,) = [c["keys"] for c in stats["clusters"].values()]
    assert keys == ["2"], keys


def test_converted_model_keyed_by_an_older_converter_still_served(fm, tmp_path):
    """Converters before this rule keyed every cluster with the option: such
    an embedded executable of a cluster without a dot still serves the run."""
    from blade_disc_tf._embed import decode_entry, encode_entry
    from tensorflow.core.protobuf import saved_model_pb2

    module = tf.Module()
    module.f = _elementwise_fn()
    src, dst = str(tmp_path / "model"), str(tmp_path / "model_disc")
    tf.saved_model.save(module, src, signatures={"serving_default": module.f})
    summary = fm.convert_saved_model(src, dst, cache_dir=str(tmp_path / "conv_cache"),
                                     fast_math="bf16")
    assert summary.compiled >= 1
    proto = saved_model_pb2.SavedModel()
    path = str(tmp_path / "model_disc" / "saved_model.pb")
    with open(path, "rb") as fh:
        proto.ParseFromString(fh.read())
    keys = []
    graph = proto.meta_graphs[0].graph_def
    for node in list(graph.node) + [n for f in graph.library.function for n in f.node_def]:
        if node.op == "DiscLaunch":
            entries = node.attr["executables"].list.s
            old = [decode_entry(e) for e in entries]
            keys += [e["key"] for e in old]
            del entries[:]
            entries.extend(encode_entry(e["key"] + "|fast_math=bf16", e["library"],
                                        tuple(e["cpu_features"])) for e in old)
    # One entry per ISA tier; no dot: the new converter leaves the option out.
    assert keys and set(keys) == {"2"}, keys
    with open(path, "wb") as fh:
        fh.write(proto.SerializeToString())
    fm.set_options(fast_math="bf16", forbid_compile=True)
    fm.reset_stats()
    x = np.random.default_rng(6).standard_normal((3, 4)).astype(np.float32)
    got = tf.saved_model.load(dst).signatures["serving_default"](x=tf.constant(x))
    np.testing.assert_allclose(list(got.values())[0].numpy(), np.tanh(x) * 2 + 1, rtol=1e-6)
    stats = fm.stats()
    assert total(stats, "cache_hits") == 1 and total(stats, "fallbacks") == 0, stats
    assert total(stats, "compiles") == 0, stats


# Weights packed once (runtime/cpu/packed_weights.h): a GEMM's B that comes
# straight from a resource variable's read (or an unclustered Const) is
# packed to bf16 on its first bf16 call and reused while its buffer is the
# same; an updated variable is repacked; TF1 ref variables and computed or
# fed tensors never are.

def _packs(disc) -> int:
    return disc.stats()["bf16_weights"]["packs"]


def _weight_case(seed=0, m=48, k=96, n=80):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(np.float32),
            rng.standard_normal((k, n)).astype(np.float32))


def _assert_bf16_close(got, a, b):
    assert np.all(np.abs(got.astype(np.float64) - a.astype(np.float64) @ b) <= _bound(a, b, a.shape[1]))


@pytest.mark.skipif(not HAS_BF16, reason="needs AVX512_BF16")
def test_unchanged_variable_weight_packed_once(fm):
    x, w = _weight_case()
    v = tf.Variable(w)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def f(a):
        return tf.matmul(a, v)

    fm.set_options(fast_math="bf16")
    for rows in (48, 48, 20, 48):  # the packed B serves any row count
        _assert_bf16_close(f(x[:rows]).numpy(), x[:rows], w)
    assert _packs(fm) == 1, fm.stats()
    assert fm.stats()["bf16_weights"]["bytes"] >= w.size * 2
    f(x[:8])  # too few rows for the bf16 kernel: fp32, nothing packed
    fm.set_options(fast_math="")  # fp32: nothing packed, fp32 result
    np.testing.assert_allclose(f(x).numpy(), x @ w, rtol=1e-4, atol=1e-4)
    assert _packs(fm) == 1


@pytest.mark.skipif(not HAS_BF16, reason="needs AVX512_BF16")
@pytest.mark.parametrize("m", [400, 800, 1100])
def test_packed_weight_many_rows_within_bound(fm, m):
    """A packed weight and many rows (row and column tasks sharing A packed
    once; ragged n, k over two 768-long chunks), then the epilogue
    2 C + bias: every element within the bound (doubled) of the float64
    product."""
    x, w = _weight_case(5, m=m, k=800, n=330)
    bias = np.random.default_rng(6).standard_normal(330).astype(np.float32)
    v = tf.Variable(w)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def f(a):
        return tf.matmul(a, v) * 2.0 + bias

    fm.set_options(fast_math="bf16")
    for rows in (m, m - 5):
        got = f(x[:rows]).numpy().astype(np.float64)
        want = 2.0 * (x[:rows].astype(np.float64) @ w) + bias
        assert np.all(np.abs(got - want) - 1e-5 * (1.0 + np.abs(want))
                      <= 2.0 * _bound(x[:rows], w, w.shape[0]))
    assert _packs(fm) == 1, fm.stats()


@pytest.mark.skipif(not HAS_BF16, reason="needs AVX512_BF16")
def test_computed_weight_is_never_packed(fm):
    x, w = _weight_case(3)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
    def f(a, b):
        return tf.matmul(a, b)

    fm.set_options(fast_math="bf16")
    for scale in (1.0, -2.0):
        _assert_bf16_close(f(x, w * scale).numpy(), x, w * scale)
    assert _packs(fm) == 0, fm.stats()


@pytest.mark.skipif(not HAS_BF16, reason="needs AVX512_BF16")
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("n", [80, 300])  # one task per product; B shared by column tasks
def test_variable_updated_in_place_is_repacked(fm, transpose_b, n):
    x, w = _weight_case(1, n=n)
    v = tf.Variable(w.T.copy() if transpose_b else w)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
    def f(a):
        return tf.matmul(a, v, transpose_b=transpose_b)

    fm.set_options(fast_math="bf16")
    _assert_bf16_close(f(x).numpy(), x, w)
    _assert_bf16_close(f(x).numpy(), x, w)
    assert _packs(fm) == 1, fm.stats()
    delta = np.full_like(v.numpy(), 3.0)
    v.assign_add(delta)  # in place when nothing else holds the buffer
    w2 = w + 3.0
    _assert_bf16_close(f(x).numpy(), x, w2)
    assert _packs(fm) == 2, fm.stats()
    v.assign(-v)
    _assert_bf16_close(f(x).numpy(), x, -w2)
    _assert_bf16_close(f(x).numpy(), x, -w2)
    assert _packs(fm) == 3, fm.stats()


@pytest.mark.skipif(not HAS_BF16, reason="needs AVX512_BF16")
def test_tf1_ref_variable_assigned_in_place_is_never_packed(fm):
    x, w = _weight_case(2)
    graph = tf.Graph()
    with graph.as_default():
        v = tf.compat.v1.Variable(w, use_resource=False)
        a = tf.compat.v1.placeholder(tf.float32, [None, None])
        out = tf.matmul(a, v)
        assign = tf.compat.v1.assign(v, w * -2.0)
    fm.set_options(fast_math="bf16")
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(v.initializer)
        _assert_bf16_close(session.run(out, {a: x}), x, w)
        session.run(assign)  # VariableV2: written in place
        _assert_bf16_close(session.run(out, {a: x}), x, w * -2.0)
    assert total(fm.stats(), "runs") >= 2, fm.stats()
    assert _packs(fm) == 0, fm.stats()
