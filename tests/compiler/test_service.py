"""compile_request contract: reply format, disk cache (compiled=False and
forbid_compile), one library for every shape of a rank signature, clear
reasons for unsupported constructs, dumps."""
import os
import stat

import numpy as np
import tensorflow as tf

from blade_disc_tf.compiler.options import CompileOptions
from blade_disc_tf.compiler.service import compile_request

from .harness import Executable


def _concrete(fn, *specs):
    return tf.function(fn).get_concrete_function(*specs)


def _req(concrete):
    fdef = concrete.function_def
    inputs = [{"dtype": t.dtype.as_datatype_enum, "rank": t.shape.rank, "value": None}
              for t in concrete.inputs]
    return {"function": fdef.signature.name, "key": "k", "inputs": inputs}, \
        fdef.SerializeToString()


def gelu_like(x, y):
    return 0.5 * x * (1.0 + tf.tanh(0.79788456 * (x + 0.044715 * x * x * x))) + y


def test_cache_hit_and_forbid_compile(tmp_path):
    cf = _concrete(gelu_like, tf.TensorSpec([None, None]), tf.TensorSpec([None]))
    req, data = _req(cf)
    opts = CompileOptions(cache_dir=str(tmp_path / "c"))
    first = compile_request(req, data, opts)
    assert first["ok"] and first["compiled"] is True, first
    assert isinstance(first["seconds"], float) and os.path.isabs(first["path"])
    assert stat.S_IMODE(os.stat(tmp_path / "c").st_mode) == 0o700
    second = compile_request(req, data, opts)
    assert second == {**second, "ok": True, "compiled": False, "path": first["path"]}
    third = compile_request(req, data, CompileOptions(cache_dir=str(tmp_path / "c"),
                                                      forbid_compile=True))
    assert third["ok"] and third["compiled"] is False
    refused = compile_request(req, data, CompileOptions(cache_dir=str(tmp_path / "other"),
                                                        forbid_compile=True))
    assert refused["ok"] is False and "forbid" in refused["error"]


def test_one_library_serves_all_shapes(tmp_path):
    cf = _concrete(gelu_like, tf.TensorSpec([None, None]), tf.TensorSpec([None]))
    reply = compile_request(*_req(cf), CompileOptions(cache_dir=str(tmp_path)))
    exe = Executable(reply["path"])
    rng = np.random.default_rng(1)
    for shape in [(1, 1), (0, 5), (7, 3), (64, 33), (1, 128)]:
        x = rng.standard_normal(shape).astype(np.float32)
        for ylen in {shape[1], 1}:
            y = rng.standard_normal(ylen).astype(np.float32)
            (got,) = exe([x, y], [np.float32])
            np.testing.assert_allclose(got, gelu_like(x, y).numpy(), rtol=1e-5, atol=1e-5)
    assert len([f for f in os.listdir(tmp_path) if f.endswith(".so")]) == 1


def test_unsupported_op_reason(tmp_path):
    cf = _concrete(lambda x: tf.math.cumprod(tf.exp(x), axis=0), tf.TensorSpec([None, None]))
    reply = compile_request(*_req(cf), CompileOptions(cache_dir=str(tmp_path)))
    assert reply["ok"] is False
    assert "Cumprod" in reply["error"] and "\n" not in reply["error"]


def test_bad_input_never_raises(tmp_path):
    reply = compile_request({"function": "f", "inputs": []}, b"\xff\x00garbage",
                            CompileOptions(cache_dir=str(tmp_path)))
    assert reply["ok"] is False and reply["error"]
    cf = _concrete(gelu_like, tf.TensorSpec([None, None]), tf.TensorSpec([None]))
    req, data = _req(cf)
    req["inputs"][0]["dtype"] = 7  # string
    reply = compile_request(req, data, CompileOptions(cache_dir=str(tmp_path)))
    assert reply["ok"] is False and "dtype" in reply["error"]


def test_dump_dir(tmp_path):
    cf = _concrete(gelu_like, tf.TensorSpec([None, None]), tf.TensorSpec([None]))
    req, data = _req(cf)
    opts = CompileOptions(cache_dir=str(tmp_path / "c"), dump_dir=str(tmp_path / "d"))
    assert compile_request(req, data, opts)["ok"]
    (fn_dir,) = os.listdir(tmp_path / "d")
    (key_dir,) = os.listdir(tmp_path / "d" / fn_dir)
    files = set(os.listdir(tmp_path / "d" / fn_dir / key_dir))
    assert {"tf_graph.pbtxt", "kernel.cc", "compile.log", "ir_00_input.mlir"} <= files
    assert any(f.endswith("_fuse.mlir") for f in files)


def test_node_names_are_escaped(tmp_path):
    """A node name with quotes/backslashes/comment closers (possible in
    hand-built graphs) ends up escaped in the generated C++ message."""
    from tensorflow.core.framework import function_pb2

    cf = _concrete(lambda x, y: x + y, tf.TensorSpec([None]), tf.TensorSpec([None]))
    req, data = _req(cf)
    fdef = function_pb2.FunctionDef.FromString(data)
    weird = 'we*/ird"na\\me??=\n'
    (add,) = [n for n in fdef.node_def if n.op == "AddV2"]
    old = add.name
    add.name = weird
    for n in fdef.node_def:
        n.input[:] = [i.replace(old + ":", weird + ":") for i in n.input]
    for k, v in list(fdef.ret.items()):
        fdef.ret[k] = v.replace(old + ":", weird + ":")
    reply = compile_request(req, fdef.SerializeToString(),
                            CompileOptions(cache_dir=str(tmp_path)))
    assert reply["ok"], reply
    exe = Executable(reply["path"])
    import pytest
    from .harness import DiscError
    with pytest.raises(DiscError) as e:
        exe([np.zeros(2, np.float32), np.zeros(3, np.float32)], [np.float32])
    assert weird in e.value.message


def _recording_cxx(tmp_path):
    """A compiler wrapper that logs its own nice value and autogroup line,
    after a pause (the parent lowers the priority just after starting it),
    for the runs that build something (-o; not the version and flag probes)."""
    log = tmp_path / "priority.log"
    script = tmp_path / "cxx.sh"
    script.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" -o "*)\n'
        "  sleep 0.3\n"
        f"  {{ cut -d' ' -f19 /proc/self/stat; cat /proc/self/autogroup 2>/dev/null; }} >> {log}\n"
        ";; esac\n"
        'exec c++ "$@"\n')
    script.chmod(0o755)
    return str(script), log


def test_background_compile_runs_at_low_priority(tmp_path):
    """An async compile (options.background) runs the system compiler at
    BACKGROUND_NICE, in its session's autogroup too where the kernel has
    one, so that the requests TF runs meanwhile keep the CPUs; a sync compile
    keeps the caller's priority."""
    from blade_disc_tf.compiler.service import BACKGROUND_NICE

    cf = _concrete(gelu_like, tf.TensorSpec([None, None]), tf.TensorSpec([None]))
    req, data = _req(cf)
    for background, dirname in ((True, "bg"), (False, "fg")):
        (tmp_path / dirname).mkdir()
        cxx, log = _recording_cxx(tmp_path / dirname)
        reply = compile_request(req, data, CompileOptions(cache_dir=str(tmp_path / dirname / "c"),
                                                          cxx=cxx, background=background))
        assert reply["ok"] and reply["compiled"], reply
        lines = log.read_text().split("\n")
        want = BACKGROUND_NICE if background else os.getpriority(os.PRIO_PROCESS, 0)
        assert int(lines[0]) == want
        if len(lines) > 1 and lines[1].startswith("/autogroup"):
            assert lines[1].endswith(f"nice {BACKGROUND_NICE}") == background


def test_disk_cache_hit_skips_the_pipeline(tmp_path, monkeypatch):
    """A request whose library is on disk (an earlier process built it) is
    answered from build/request_index.py without lowering: the pipeline is
    what a disk hit used to cost (0.05-0.15 s per cluster).  Another fast
    math mode, a changed compiler, a garbled index or a dump dir go the
    whole way again; the answer is the same library."""
    from blade_disc_tf.compiler import service
    from blade_disc_tf.compiler.build import request_index

    cf = _concrete(gelu_like, tf.TensorSpec([None, None]), tf.TensorSpec([None]))
    req, data = _req(cf)
    opts = CompileOptions(cache_dir=str(tmp_path / "c"))
    first = compile_request(req, data, opts)
    assert first["ok"] and first["compiled"], first
    lowered = []
    real_lower = service._lower
    monkeypatch.setattr(service, "_lower", lambda *a: lowered.append(1) or real_lower(*a))

    hit = compile_request(req, data, opts)
    assert hit == {**hit, "ok": True, "compiled": False, "path": first["path"]} and not lowered

    other = compile_request({**req, "fast_math": "bf16"}, data, opts)
    assert other["ok"] and len(lowered) == 1      # no float dot: the same library
    assert other["path"] == first["path"]

    monkeypatch.setattr(request_index, "compiler_fingerprint", lambda: "changed")
    assert compile_request(req, data, opts)["path"] == first["path"] and len(lowered) == 2
    assert compile_request(req, data, opts)["compiled"] is False and len(lowered) == 2

    for index in (tmp_path / "c").glob("*.req"):
        index.write_text("not a key\n")
    assert compile_request(req, data, opts)["path"] == first["path"] and len(lowered) == 3

    dumped = compile_request(req, data, CompileOptions(cache_dir=str(tmp_path / "c"),
                                                       dump_dir=str(tmp_path / "d")))
    assert dumped["ok"] and len(lowered) == 4
    assert list((tmp_path / "d").rglob("kernel.cc"))


def test_request_index_refuses_a_tampered_library(tmp_path):
    """An index entry leads only to a library that passes the cache's trust
    checks: a library whose bytes no longer match its sidecar is rebuilt."""
    cf = _concrete(gelu_like, tf.TensorSpec([None, None]), tf.TensorSpec([None]))
    req, data = _req(cf)
    opts = CompileOptions(cache_dir=str(tmp_path / "c"))
    first = compile_request(req, data, opts)
    with open(first["path"], "ab") as f:
        f.write(b"\0")
    again = compile_request(req, data, opts)
    assert again["ok"] and again["compiled"] is True and again["path"] == first["path"]
