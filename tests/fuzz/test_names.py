"""Hostile node names (names.py) through the compiler: same results and the
same errors as the plainly named function, names shown verbatim (a name
holding "{0}" is not replaced by a shape: issue 6, finding c)."""
import os

import numpy as np
import pytest
import tensorflow as tf

from compiler.harness import DiscError, Executable

from .generator import Generator, OpCatalog, build_fn, make_inputs, random_dims
from .names import mismatched_dims, rename_nodes, renamed_message

NAME_CASES = int(os.environ.get("DISC_FUZZ_NAME_CASES", "12"))
NAME_SEED = 20261201


def _compile(fdef: bytes, inputs: list, cache_dir: str, dump_dir: str | None = None) -> dict:
    from blade_disc_tf.compiler.options import CompileOptions
    from blade_disc_tf.compiler.service import compile_request
    request = {"function": "f", "key": "f", "inputs": inputs}
    return compile_request(request, fdef, CompileOptions(cache_dir=cache_dir, dump_dir=dump_dir))


def _run(path: str, arrays: list, out_dtypes: list):
    try:
        return Executable(path)(arrays, out_dtypes), None
    except DiscError as e:
        return None, str(e)


def _resized(arrays: list, change: dict) -> list:
    out = list(arrays)
    x = out[change["input"]]
    shape = list(x.shape)
    shape[change["axis"]] = change["size"]
    out[change["input"]] = np.resize(x, shape).astype(x.dtype)
    return out


def test_error_message_shows_a_brace_name_verbatim(tmp_path):
    f = tf.function(lambda x, y: tf.raw_ops.AddN(inputs=[x * 2.0, y]))
    concrete = f.get_concrete_function(*[tf.TensorSpec([None, None], tf.float32)] * 2)
    addn = next(nd.name for nd in concrete.function_def.node_def if nd.op == "AddN")
    fdef, names = rename_nodes(concrete.function_def.SerializeToString(), seed=3,
                               fixed={addn: "sum{0}of{1}'\"\\n{{0}}\n%s"})
    names_in = {"dtype": 1, "rank": 2, "value": None}
    reply = _compile(fdef, [names_in, names_in], str(tmp_path))
    assert reply["ok"], reply
    x, y = np.ones((2, 3), np.float32), np.ones((2, 4), np.float32)
    _, err = _run(reply["path"], [x, y], [np.float32])
    assert f"Inputs to operation {names[addn]} of type AddN" in err, (names[addn], err)
    assert "Input 0: [2,3] != input 1: [2,4]" in err, err
    assert f"node '{names[addn]}'" in err, err


def test_conv_negative_size_message_shows_the_name_verbatim(tmp_path):
    f = tf.function(lambda x, w: tf.nn.conv2d(x * 2.0, w, strides=1, padding="VALID"))
    concrete = f.get_concrete_function(tf.TensorSpec([None] * 4, tf.float32),
                                       tf.TensorSpec([None] * 4, tf.float32))
    conv = next(nd.name for nd in concrete.function_def.node_def if nd.op == "Conv2D")
    hostile = "c{0}{op}{node}{{1}}'\n"
    fdef, _ = rename_nodes(concrete.function_def.SerializeToString(), seed=5,
                           fixed={conv: hostile})
    spec = {"dtype": 1, "rank": 4, "value": None}
    reply = _compile(fdef, [spec, spec], str(tmp_path))
    assert reply["ok"], reply
    x, w = np.ones((1, 1, 1, 1), np.float32), np.ones((3, 3, 1, 1), np.float32)
    _, err = _run(reply["path"], [x, w], [np.float32])
    assert "Computed output size would be negative" in err, err
    assert f"(node '{hostile}', op Conv2D)" in err, err


@pytest.mark.parametrize("case", range(NAME_CASES))
def test_renamed_programs_behave_the_same(tmp_path, case):
    seed = NAME_SEED + case
    program = Generator(OpCatalog(), seed).generate()
    specs = [tf.TensorSpec([None] * len(v.shape), tf.as_dtype(v.dtype))
             for v in program.inputs]
    concrete = tf.function(build_fn(program)).get_concrete_function(*specs)
    plain = concrete.function_def.SerializeToString()
    hostile, names = rename_nodes(plain, seed)
    inputs = [{"dtype": s.dtype.as_datatype_enum, "rank": s.shape.rank, "value": None}
              for s in specs]
    a = _compile(plain, inputs, str(tmp_path))
    # (the dump of every pass writes the names too)
    b = _compile(hostile, inputs, str(tmp_path), str(tmp_path / "dump") if case % 3 == 0 else None)
    assert a["ok"] == b["ok"], (a, b)
    if not a["ok"]:
        assert renamed_message(a["error"], names) == b["error"], (a, b)
        return
    out_dtypes = [t.dtype.as_numpy_dtype for t in concrete.outputs]
    rng = np.random.default_rng(seed)
    for call in range(4):
        dims = random_dims(program, rng)
        arrays = make_inputs(program, rng, dims)
        change = mismatched_dims(program, dims, rng) if call % 2 else None
        if change:
            arrays = _resized(arrays, change)
        want, want_err = _run(a["path"], arrays, out_dtypes)
        got, got_err = _run(b["path"], arrays, out_dtypes)
        if want_err or got_err:
            assert renamed_message(want_err or "", names) == got_err, (want_err, got_err)
            continue
        for w, g in zip(want, got):
            np.testing.assert_array_equal(w, g)
