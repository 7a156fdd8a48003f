"""Packaging: maps the source layout (tf_disc/{python,compiler,runtime}) onto
the import package `blade_disc_tf`.

A wheel (`pip wheel .`, `pip install .`) builds the op library with
tf_disc/build_ops.py in its build_py step and ships every libblade_disc_tf*.so
that leaves in tf_disc/python/; such a wheel is platform-specific and pins the
TensorFlow it was built against.  An editable install (`pip install -e .`,
scripts/setup.sh) builds nothing: it uses the library built in the checkout
beforehand (see README)."""
import glob
import importlib.metadata
import importlib.util
import os

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

_ROOT = os.path.dirname(os.path.abspath(__file__))
_OP_LIBRARIES = "libblade_disc_tf*.so"   # the main library and per-ISA kernel libraries
_TF_SUPPORTED = "tensorflow==2.21.*"    # as requirements.txt


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


def _installed_tf_version():
    """Version of the installed `tensorflow` distribution, None without one.
    Read from its metadata: importing TF would cost every setup.py run
    (metadata, editable installs) seconds; build_py checks it against
    tf.__version__ once it has imported TF anyway."""
    try:
        return importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        return None


_TF_VERSION = _installed_tf_version()


def _build_op_libraries() -> list:
    """Builds the op library in the checkout (tf_disc/build_ops.py, a no-op when
    up to date) and returns every libblade_disc_tf*.so beside it."""
    spec = importlib.util.spec_from_file_location(
        "build_ops", os.path.join(_ROOT, "tf_disc", "build_ops.py"))
    build_ops = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_ops)
    main_library = build_ops.build(force=False, verbose=True)

    import tensorflow as tf  # build_ops has imported it already
    from packaging.version import Version  # a dependency of TensorFlow

    if _TF_VERSION is None or Version(tf.__version__) != Version(_TF_VERSION):
        # The wheel's Requires-Dist must name the TF the library was built for.
        raise RuntimeError(
            f"the op library was built against TensorFlow {tf.__version__} "
            f"({tf.__file__}) but the installed `tensorflow` distribution is "
            f"{_TF_VERSION}: the wheel would pin the wrong version")
    return sorted(glob.glob(os.path.join(os.path.dirname(main_library), _OP_LIBRARIES)))


class BuildPyWithOps(build_py):
    """build_py that also builds the op library and copies it into the package,
    except for editable installs (the checkout's own library is used there)."""

    def run(self) -> None:
        super().run()
        self._op_outputs = []
        if getattr(self, "editable_mode", False):
            return
        for path in _build_op_libraries():
            dest = os.path.join(self.build_lib, "blade_disc_tf", os.path.basename(path))
            self.copy_file(path, dest, preserve_mode=True)
            self._op_outputs.append(dest)

    def get_outputs(self, include_bytecode: bool = True) -> list:
        return super().get_outputs(include_bytecode) + getattr(self, "_op_outputs", [])


class BinaryDistribution(Distribution):
    """A native library inside: the wheel is tagged for this CPython and
    platform (cp3XY-cp3XY-linux_x86_64), never py3-none-any."""

    def has_ext_modules(self) -> bool:
        return True


_dirs = {}
_dirs.update(_subpackages("blade_disc_tf", "tf_disc/python"))
_dirs.update(_subpackages("blade_disc_tf.compiler", "tf_disc/compiler"))
_dirs["blade_disc_tf.runtime"] = "tf_disc/runtime"

setup(
    packages=sorted(_dirs),
    package_dir=_dirs,
    package_data={"blade_disc_tf.runtime": ["*.h", "host/*.h", "cpu/prelude/*.h"]},  # what generated code includes
    include_package_data=False,
    install_requires=[
        f"tensorflow=={_TF_VERSION}" if _TF_VERSION else _TF_SUPPORTED,
        "tensorflow-io-gcs-filesystem",
        "numpy",
    ],
    cmdclass={"build_py": BuildPyWithOps},
    distclass=BinaryDistribution,
    zip_safe=False,
)
