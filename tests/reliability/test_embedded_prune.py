"""The process-wide map of embedded libraries (ops/embedded.cc) drops the
entries of unloaded libraries when another library is loaded: a server that
loads and unloads a series of converted models keeps one entry per library
in use, not one per library it ever loaded."""
import ctypes

import numpy as np
import tensorflow as tf

from test_release import _chain, _collect, _loaded, _reference, random_f32


def _tracked() -> int:
    from blade_disc_tf._library import load
    fn = load()._c.DiscEmbeddedLibrariesTracked
    fn.argtypes, fn.restype = [], ctypes.c_int64
    return fn()


def _convert(tmp_path, k: int, scale: float) -> str:
    module = tf.Module()
    spec = tf.TensorSpec([None, None], tf.float32)
    module.f = tf.function(lambda x, y: {"out": _chain(x, y, scale)}, input_signature=[spec, spec])
    src, dst = str(tmp_path / f"model{k}"), str(tmp_path / f"model{k}_disc")
    tf.saved_model.save(module, src, signatures={"serving_default": module.f})
    import blade_disc_tf as disc
    assert disc.convert_saved_model(src, dst, cache_dir=str(tmp_path / "cache")).compiled >= 1
    return dst


def test_unloaded_models_leave_no_entries(disc, tmp_path):
    scales = [0.5, 1.5, 2.5]   # a graph constant each: three distinct libraries
    paths = [_convert(tmp_path, k, s) for k, s in enumerate(scales)]
    _collect()
    base = _loaded(disc)
    for k, (path, scale) in enumerate(zip(paths, scales)):
        loaded = tf.saved_model.load(path)
        fn = loaded.signatures["serving_default"]
        x, y = random_f32((3, 4), k), random_f32((3, 4), 10 + k)
        np.testing.assert_allclose(fn(x=tf.constant(x), y=tf.constant(y))["out"].numpy(),
                                   _reference(x, y, scale), rtol=2e-5, atol=1e-5)
        assert _loaded(disc) == base + 1
        # Only this model's library: the earlier ones (released) were
        # dropped when it was loaded.
        assert _tracked() == 1, (k, _tracked())
        del fn, loaded
        _collect()
        assert _loaded(disc) == base
