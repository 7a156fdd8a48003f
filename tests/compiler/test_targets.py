"""Targets as plug-ins (compiler/target/): the service asks the options'
target for its passes, code and build flags; the target is in every disk
cache key; a target that cannot run an op leaves the cluster in TF with the
op named."""
import dataclasses
import shutil

import pytest
import tensorflow as tf

from blade_disc_tf.compiler import service, target as targets
from blade_disc_tf.compiler.ir.core import Op
from blade_disc_tf.compiler.options import CompileOptions
from blade_disc_tf.compiler.target.cpu import CpuTarget


def _request(fn, *specs):
    concrete = tf.function(fn).get_concrete_function(*specs)
    inputs = [{"dtype": t.dtype.as_datatype_enum, "rank": t.shape.rank, "value": None}
              for t in concrete.inputs]
    return ({"function": concrete.function_def.signature.name, "key": "2", "inputs": inputs},
            concrete.function_def.SerializeToString())


def _layer(x):
    return tf.tanh(x) * 2.0 + 1.0


SPEC = tf.TensorSpec([None, None], tf.float32)


def test_unknown_target_is_named():
    with pytest.raises(ValueError, match="unknown compile target 'tpu'.*cpu, cpu_reference"):
        targets.get_target("tpu")
    assert targets.get_target("").name == targets.DEFAULT_TARGET == "cpu"


def test_reference_target_builds_scalar_baseline_code():
    options = CompileOptions(cache_dir="unused", target="cpu_reference")
    flags = targets.get_target("cpu_reference").build_flags({"target_isa": "avx512"}, options)
    assert "-fno-tree-vectorize" in flags and "-fno-tree-slp-vectorize" in flags
    assert not [f for f in flags if f.startswith("-march=") and f != "-march=x86-64"]
    cpu = targets.get_target("cpu").build_flags({"target_isa": "avx2"}, options)
    assert "-march=x86-64-v3" in cpu and "-fno-tree-vectorize" not in cpu


def test_target_is_part_of_the_cache_key(tmp_path):
    req, fdef = _request(_layer, SPEC)
    paths = {}
    for name in targets.target_names():
        if name == "cuda" and shutil.which("nvcc") is None:
            continue   # built by tests/compiler/test_cuda_host.py where nvcc is
        options = CompileOptions(cache_dir=str(tmp_path), target=name)
        reply = service.compile_request(req, fdef, options)
        assert reply["ok"] and reply["compiled"], reply
        again = service.compile_request(req, fdef, options)
        assert again["ok"] and not again["compiled"] and again["path"] == reply["path"]
        paths[name] = reply["path"]
    # Same source and request, one library per target.
    assert len(set(paths.values())) == len(paths)


@dataclasses.dataclass
class _NoTanh(CpuTarget):
    """A target whose code generator has no tanh."""
    name: str = "no_tanh"

    def supports(self, op: Op) -> bool:
        return op.name != "tanh"


def test_unsupported_op_leaves_cluster_in_tf(tmp_path, monkeypatch):
    monkeypatch.setitem(targets._TARGETS, "no_tanh", _NoTanh())
    options = CompileOptions(cache_dir=str(tmp_path), target="no_tanh")
    reply = service.compile_request(*_request(_layer, SPEC), options)
    assert not reply["ok"]
    assert "target no_tanh cannot run IR op tanh" in reply["error"], reply
    reply = service.compile_request(*_request(lambda x: x * 2.0 + 1.0, SPEC), options)
    assert reply["ok"], reply


def test_top_level_op_without_host_code_is_an_error():
    """An op codegen has no host code for fails the compile (the cluster
    runs in TF) instead of being dropped from the entry."""
    from blade_disc_tf.compiler.codegen.cpu.source import generate_source
    from blade_disc_tf.compiler.ir import parse_func
    func = parse_func("func @f(%arg0: f32[s0]) {\n  %v0 = negate(%arg0) : f32[s0]\n"
                      "  return(%v0)\n}")
    with pytest.raises(NotImplementedError, match="no host code for top-level IR op negate"):
        generate_source(func)
