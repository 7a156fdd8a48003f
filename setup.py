"""Packaging: maps the source layout (tf_disc/{python,compiler,runtime}) onto
the import package `blade_disc_tf`.  The op library is built against the
installed TensorFlow wheel by tf_disc/build_ops.py (see README)."""
import os

from setuptools import setup

_ROOT = os.path.dirname(os.path.abspath(__file__))


def _subpackages(prefix: str, src: str) -> dict:
    """Every folder with an __init__.py under src, as {package: dir}."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(os.path.join(_ROOT, src)):
        dirnames[:] = [d for d in dirnames if not d.startswith((".", "_"))]
        if "__init__.py" in filenames:
            rel = os.path.relpath(dirpath, os.path.join(_ROOT, src))
            name = prefix if rel == "." else prefix + "." + rel.replace(os.sep, ".")
            found[name] = os.path.relpath(dirpath, _ROOT)
    return found


_dirs = {}
_dirs.update(_subpackages("blade_disc_tf", "tf_disc/python"))
_dirs.update(_subpackages("blade_disc_tf.compiler", "tf_disc/compiler"))
_dirs["blade_disc_tf.runtime"] = "tf_disc/runtime"

setup(
    packages=sorted(_dirs),
    package_dir=_dirs,
    package_data={"blade_disc_tf": ["*.so"], "blade_disc_tf.runtime": ["*.h"]},
    include_package_data=False,
    zip_safe=False,
)
