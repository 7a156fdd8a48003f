"""SavedModel conversion: clusters compiled ahead of time and embedded, served
in a fresh process without the compiler (zero compiles, outputs equal to the
original for many shapes), reconversion, and embedded executables refused
when corrupted or built for a CPU this one is not."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from serving_fixtures import (  # noqa: F401
    MODELS, assert_served_without_compiler, convert, run_fresh, serving_base)

TOL = 1e-4


def _launches(saved_model_dir: str) -> list:
    """Every DiscLaunch NodeDef of a SavedModel (graphs and functions)."""
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(saved_model_dir, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    nodes = []
    for meta in proto.meta_graphs:
        nodes += [n for n in meta.graph_def.node if n.op == "DiscLaunch"]
        for func in meta.graph_def.library.function:
            nodes += [n for n in func.node_def if n.op == "DiscLaunch"]
    return nodes


def _rewrite_entries(src: str, dst: str, change) -> None:
    """Copies a SavedModel, passing every embedded executable through change()."""
    from tensorflow.core.protobuf import saved_model_pb2

    shutil.copytree(src, dst)
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(dst, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    for meta in proto.meta_graphs:
        nodes = list(meta.graph_def.node)
        for func in meta.graph_def.library.function:
            nodes += list(func.node_def)
        for node in nodes:
            entries = node.attr["executables"].list.s if node.op == "DiscLaunch" else []
            changed = [change(e) for e in entries]
            del entries[:]
            entries.extend(changed)
    with open(os.path.join(dst, "saved_model.pb"), "wb") as f:
        f.write(proto.SerializeToString())


def _max_error(result: dict) -> float:
    return max(max(e.values()) for e in result["errors"])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_clusters_compiled_and_embedded(name, serving_base):
    m = convert(name, serving_base)
    s = m.summary
    assert s.format == m.format and s.clusters
    # The CNN's convolutions may stay in TF; everything else is compiled.
    assert s.compiled == len(s.clusters) if name != "cnn" else s.compiled >= 1
    assert s.ops_covered > 0 and s.compile_seconds > 0
    from blade_disc_tf._embed import decode_entry

    entries = [decode_entry(e) for n in _launches(m.converted)
               for e in n.attr["executables"].list.s]
    # One executable per tier by default: AVX2 and AVX-512 at least.
    compiled = [c for c in s.clusters if c.compiled]
    assert len(entries) == sum(len(c.target_isas) for c in compiled)
    assert all({"avx2", "avx512"} <= set(c.target_isas) for c in compiled)
    assert all(e["size"] == len(e["library"]) > 0 and e["cpu_features"] for e in entries)
    assert any("avx512f" in e["cpu_features"] for e in entries)
    assert any("avx2" in e["cpu_features"] and "avx512f" not in e["cpu_features"]
               for e in entries)


@pytest.mark.parametrize("name", ["bert", "cnn"])
def test_tf2_signatures_unchanged(name, serving_base):
    import tensorflow as tf

    m = convert(name, serving_base)
    before, after = tf.saved_model.load(m.original), tf.saved_model.load(m.converted)
    assert sorted(before.signatures) == sorted(after.signatures)
    for key in before.signatures:
        a, b = before.signatures[key], after.signatures[key]
        assert a.structured_input_signature == b.structured_input_signature
        assert a.structured_outputs == b.structured_outputs


def test_only_chosen_signatures_converted(serving_base, tmp_path):
    import tensorflow as tf

    import blade_disc_tf as disc
    from blade_disc_tf._offline_cluster import has_launches

    m = convert("cnn", serving_base)
    dst = str(tmp_path / "serve_only")
    summary = disc.convert_saved_model(m.original, dst, ["serve"], cache_dir=m.cache_dir)
    assert list(summary.reports) == ["serve"] and summary.compiled >= 1
    sigs = tf.saved_model.load(dst).signatures
    assert has_launches(sigs["serve"].graph.as_graph_def())
    assert not has_launches(sigs["serving_default"].graph.as_graph_def())
    with pytest.raises(ValueError, match="no signature"):
        disc.convert_saved_model(m.original, str(tmp_path / "bad"), ["nope"])


def test_clusters_left_to_run_time_reported_and_run(disc, serving_base, tmp_path):
    import numpy as np
    import tensorflow as tf

    from serving_models import save_partly_static

    src, dst = str(tmp_path / "partly"), str(tmp_path / "partly_disc")
    save_partly_static(src)
    lines = []
    summary = disc.convert_saved_model(src, dst, progress=lines.append,
                                       cache_dir=os.path.join(serving_base, "cache"))
    reasons = sorted(r.reason for r in summary.clusters if not r.compiled)
    assert summary.compiled >= 1
    assert reasons == ["input rank unknown before run time",
                       "inside a called function body, compiled at run time"]
    assert sum("left to run time:" in ln for ln in lines) == 2
    fn = tf.saved_model.load(dst).signatures["serving_default"]
    for shape in [(2, 3), (7, 1), (4, 9)]:
        x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
        h = x * 3.0 - 1.0
        want = np.cumprod(np.tanh(h * 0.5 + 1.0) / (1.0 + np.exp(-h)), axis=1) * 2.0 + 1.0
        np.testing.assert_allclose(fn(x=tf.constant(x))["y"].numpy(), want, rtol=1e-5, atol=1e-5)


def test_compilable_noinline_call_compiled_ahead_of_time(disc, serving_base, tmp_path):
    """The call is inlined (call_inlining.h): one cluster, compiled ahead of
    time, and no call left in the converted signature."""
    import numpy as np
    import tensorflow as tf

    from serving_models import save_compilable_call

    src, dst = str(tmp_path / "call"), str(tmp_path / "call_disc")
    save_compilable_call(src)
    summary = disc.convert_saved_model(src, dst, cache_dir=os.path.join(serving_base, "cache"))
    assert len(summary.clusters) == 1 and summary.compiled == 1, summary.lines()
    assert len(_launches(dst)) == 1
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(dst, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    bodies = [[n.op for n in func.node_def] for func in proto.meta_graphs[0].graph_def.library.function]
    converted = [ops for ops in bodies if "DiscLaunch" in ops]
    assert len(converted) == 1, bodies
    assert not {"PartitionedCall", "StatefulPartitionedCall"} & set(converted[0]), converted
    fn = tf.saved_model.load(dst).signatures["serving_default"]
    for shape in [(2, 3), (7, 1), (4, 9)]:
        x = np.random.default_rng(len(shape)).standard_normal(shape).astype(np.float32)
        h = x * 3.0 - 1.0
        want = np.tanh(h * 0.5 + 1.0) / (1.0 + np.exp(-h)) * 2.0 + 1.0
        np.testing.assert_allclose(fn(x=tf.constant(x))["y"].numpy(), want, rtol=1e-5, atol=1e-5)


def test_broken_compiler_leaves_clusters_to_run_time(serving_base, tmp_path):
    import blade_disc_tf as disc

    m = convert("tf1", serving_base)
    summary = disc.convert_saved_model(m.original, str(tmp_path / "out"), cxx="/nonexistent/c++",
                                       cache_dir=str(tmp_path / "empty_cache"))
    assert summary.clusters and summary.compiled == 0
    assert all(r.reason.startswith("compile failed: cannot run C++ compiler")
               for r in summary.clusters)
    assert all(not n.attr["executables"].list.s for n in _launches(str(tmp_path / "out")))


def test_tf1_signatures_and_variables_unchanged(serving_base):
    import tensorflow as tf

    m = convert("tf1", serving_base)
    metas = []
    for path in (m.original, m.converted):
        with tf.compat.v1.Session(graph=tf.Graph()) as sess:
            meta = tf.compat.v1.saved_model.load(sess, ["serve"], path)
            values = sess.run({v.name: v for v in tf.compat.v1.global_variables()})
            metas.append((meta.signature_def, values))
    assert metas[0][0] == metas[1][0]
    assert sorted(metas[0][1]) == sorted(metas[1][1])
    for name, value in metas[0][1].items():
        assert (value == metas[1][1][name]).all()


def test_fresh_process_serves_without_compiler(serving_base):
    """The CNN here; the BERT encoder and the TF1 model get the same check in
    test_cpp_serving.py, before the C++ server runs them."""
    m = convert("cnn", serving_base)
    result, _ = run_fresh(m, m.converted, serving_base)
    assert_served_without_compiler(result)


def test_reconversion_does_not_cluster_again(serving_base, tmp_path):
    import blade_disc_tf as disc

    for name in ("tf1", "cnn"):
        m = convert(name, serving_base)
        again = str(tmp_path / name)
        summary = disc.convert_saved_model(m.converted, again, cache_dir=m.cache_dir)
        assert summary.clusters == []
        first, second = _launches(m.converted), _launches(again)
        assert len(second) == len(first)
        # Loading a TF2 SavedModel renames functions (a prefix and a suffix).
        bodies = [sorted(re.search(r"disc_cluster_[0-9a-f]+", n.attr["f"].func.name).group()
                         for n in launches) for launches in (first, second)]
        assert bodies[0] == bodies[1]
        assert sorted(len(n.attr["executables"].list.s) for n in second) == \
            sorted(len(n.attr["executables"].list.s) for n in first)


def test_corrupted_executable_refused_with_fallback(serving_base, tmp_path):
    m = convert("tf1", serving_base)
    bad = str(tmp_path / "corrupt")

    _rewrite_entries(m.converted, bad, _flip_last_byte)
    result, stderr = run_fresh(m, bad, serving_base)
    assert list(result["fallback_reasons"]) == ["embedded executable sha256 mismatch"]
    assert result["compiles"] == 0 and result["cache_hits"] == 0
    assert stderr.count("refusing the embedded executable") == 1
    assert _max_error(result) < TOL


def _flip_last_byte(entry: bytes) -> bytes:
    return entry[:-1] + bytes([entry[-1] ^ 0xFF])


def test_fallback_bodies_not_clustered_again(disc, serving_base, tmp_path):
    """With the optimizer on, a converted model whose executables are refused
    runs its cluster bodies in TF; loading renamed them, and they still must
    not be clustered (and compiled) again."""
    import numpy as np
    import tensorflow as tf

    m = convert("cnn", serving_base)
    bad = str(tmp_path / "corrupt")
    _rewrite_entries(m.converted, bad, _flip_last_byte)
    disc.reset_stats()  # count from here: convert() above may have clustered
    fn = tf.saved_model.load(bad).signatures[m.signature]
    x = tf.constant(np.random.default_rng(0).standard_normal(m.shapes[1]).astype(np.float32))
    assert fn(image=x)["output_0"].shape == (m.shapes[1][0], 10)
    stats = disc.stats()
    assert stats["optimizer"]["clusters_created"] == 0, stats
    reasons = {r for c in stats["clusters"].values() for r in c["fallback_reasons"]}
    assert reasons == {"embedded executable sha256 mismatch"}
    assert all(c["compiles"] == 0 for c in stats["clusters"].values())


def test_missing_cpu_feature_falls_back(serving_base, tmp_path):
    from blade_disc_tf._embed import decode_entry, encode_entry

    m = convert("tf1", serving_base)
    other_cpu = str(tmp_path / "other_cpu")

    def needs_absent_feature(entry: bytes) -> bytes:
        e = decode_entry(entry)
        return encode_entry(e["key"], e["library"], tuple(e["cpu_features"]) + ("disc_absent",))

    _rewrite_entries(m.converted, other_cpu, needs_absent_feature)
    result, stderr = run_fresh(m, other_cpu, serving_base)
    assert list(result["fallback_reasons"]) == ["embedded executable needs CPU features disc_absent"]
    assert stderr.count("needs CPU features this machine lacks or DISC_MAX_CPU_ISA "
                        "excludes (disc_absent)") == 1
    assert _max_error(result) < TOL


@pytest.mark.parametrize("name", ["tf1", "bert"])
def test_converted_model_serves_compiled_under_avx2_cap(name, serving_base):
    """A model converted here (AVX-512 or not) serves compiled on an
    AVX2-only machine, stood in for by DISC_MAX_CPU_ISA=avx2: the AVX2
    executables load, no compiler runs, outputs equal the original's."""
    m = convert(name, serving_base)
    uncapped, _ = run_fresh(m, m.converted, serving_base)
    assert_served_without_compiler(uncapped)
    host = uncapped["cpu"]["selected"]
    from blade_disc_tf.compiler.build import isa

    assert set(uncapped["embedded_tiers"]) == {isa.kernel_library_tier(host)}
    capped, _ = run_fresh(m, m.converted, serving_base, env={"DISC_MAX_CPU_ISA": "avx2"})
    assert_served_without_compiler(capped)
    assert capped["cpu"]["selected"] == capped["cpu"]["kernels"] == "avx2"
    assert set(capped["embedded_tiers"]) == {"avx2"}


def test_cli(serving_base, tmp_path, capsys):
    from blade_disc_tf.__main__ import main

    m = convert("tf1", serving_base)
    with pytest.raises(SystemExit) as exit_info:
        main(["convert", "--help"])
    assert exit_info.value.code == 0
    assert "SRC" in capsys.readouterr().out
    assert main(["convert", str(tmp_path / "nope"), str(tmp_path / "x")]) == 1
    assert "error:" in capsys.readouterr().err
    cli = [sys.executable, "-m", "blade_disc_tf", "convert"]
    out = subprocess.run(cli + [m.original, str(tmp_path / "cli"), "--cache-dir", m.cache_dir],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert any(ln.startswith("signatures serve:") and "1 cluster(s)" in ln for ln in lines)
    assert any(ln.strip().startswith("cluster ") and "compiled for" in ln for ln in lines)
    assert any(ln.startswith("tf1 SavedModel: 1 cluster(s), 1 compiled") for ln in lines)
