"""The package as users get it: `pip wheel .` builds the op library into a
platform wheel that pins the TensorFlow it was built against; installed into
a fresh venv, it compiles a dynamic-shape tf.function from outside the
checkout.  An editable install (scripts/setup.sh) builds nothing.

The wheel is built once per module from the checkout itself: its build_py
runs tf_disc/build_ops.py, which finds the libraries up to date (the test
command built them; a stale one is rebuilt here), so the test costs seconds
rather than the minutes of a from-scratch build of every kernel tier.  It
writes only ignored build outputs (build/, *.egg-info) into the checkout."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHEEL_BUILD_TIMEOUT_S = 1800

pytestmark = pytest.mark.slow

# Run from a folder outside the checkout with the venv's python: prints where
# everything was found and the cluster counters after three shapes of one rank.
INSTALLED_SCRIPT = """
import json, os, sys
import numpy as np
import tensorflow as tf
import blade_disc_tf as disc
from blade_disc_tf import _library
from blade_disc_tf.compiler.build.command import include_dir

disc.enable(min_cluster_size=1)
f = tf.function(lambda x: tf.reduce_sum(tf.nn.relu(tf.matmul(x, x, transpose_b=True) * 2.0
                                                  + 1.0), axis=1),
                input_signature=[tf.TensorSpec([None, None], tf.float32)])
rng = np.random.default_rng(0)
for shape in [(2, 3), (5, 7), (40, 16)]:
    x = rng.standard_normal(shape).astype(np.float32)
    want = np.maximum((x.astype(np.float64) @ x.T) * 2 + 1, 0).sum(axis=1)
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-4, atol=1e-4)
print(json.dumps({
    "modules": sorted(m.__file__ for name, m in sys.modules.items()
                      if name.startswith("blade_disc_tf") and getattr(m, "__file__", None)),
    "library": _library.load().path,
    "include_dir": include_dir(),
    "missing_library_message": _library._not_built_message(
        os.path.dirname(_library.__file__)),
    "clusters": disc.stats()["clusters"],
    "cpu": disc.stats()["cpu"],
}))
"""

# Run with an editable install of a checkout that has no op library.
EDITABLE_SCRIPT = """
import json
import blade_disc_tf as disc
from blade_disc_tf import _library
try:
    _library.library_path()
    message = None
except _library.OpLibraryNotFound as e:
    message = str(e)
print(json.dumps({"package": disc.__file__, "message": message}))
"""


_IGNORED_AT_ROOT = shutil.ignore_patterns(".git", "build", "bazel-*", ".whl", ".gl")
_IGNORED = shutil.ignore_patterns("__pycache__", "*.so", "*.o", "*.egg-info", ".pytest_cache")


def _copy_sources(dest: str) -> str:
    """The source tree without build outputs (objects, libraries, the top
    build/; tf_disc/compiler/build/ is a source package)."""
    def ignore(folder: str, names: list) -> set:
        found = _IGNORED(folder, names)
        if os.path.samefile(folder, ROOT):
            found |= _IGNORED_AT_ROOT(folder, names)
        return found

    shutil.copytree(ROOT, dest, symlinks=True, ignore=ignore)
    return dest


def _env(cache_dir: str) -> dict:
    """The environment of the subprocesses: no path into the checkout."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "DISC_OP_LIBRARY", "DISC_DUMP_DIR")}
    env.update(DISC_CACHE_DIR=cache_dir, TF_CPP_MIN_LOG_LEVEL="2")
    return env


def _run(cmd: list, cwd: str, env: dict, timeout: float) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, (
        f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
        f"{proc.stderr[-5000:]}")
    return proc.stdout


def _venv(path: str, env: dict) -> str:
    """A venv that sees the system's packages (TensorFlow); its python.
    Without its own pip: the system pip, run by the venv's python, installs
    into the venv."""
    _run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", path],
         cwd=os.path.dirname(path), env=env, timeout=120)
    return os.path.join(path, "bin", "python")


def _last_json_line(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """`pip wheel .` of the checkout: the wheel and the tree it came from."""
    base = tmp_path_factory.mktemp("wheel")
    dist = str(base / "dist")
    _run([sys.executable, "-m", "pip", "wheel", ROOT, "--no-build-isolation",
          "--no-deps", "-w", dist], cwd=str(base), env=_env(str(base / "cache")),
         timeout=WHEEL_BUILD_TIMEOUT_S)
    wheels = glob.glob(os.path.join(dist, "blade_disc_tf-*.whl"))
    assert len(wheels) == 1, os.listdir(dist)
    return {"wheel": wheels[0], "src": ROOT, "base": str(base)}


@pytest.fixture(scope="module")
def installed(built) -> dict:
    """The wheel installed into a fresh venv; the venv and its python."""
    base = built["base"]
    env = _env(os.path.join(base, "cache"))
    python = _venv(os.path.join(base, "venv"), env)
    _run([python, "-m", "pip", "install", "--no-deps", "--no-index", built["wheel"]],
         cwd=base, env=env, timeout=300)
    return {"venv": os.path.join(base, "venv"), "python": python}


def test_wheel_contents_and_metadata(built):
    import tensorflow as tf

    with zipfile.ZipFile(built["wheel"]) as whl:
        names = set(whl.namelist())
        (dist_info,) = {n.split("/")[0] for n in names if n.endswith(".dist-info/WHEEL")}
        metadata = whl.read(dist_info + "/METADATA").decode()
        wheel_info = whl.read(dist_info + "/WHEEL").decode()
    built_libs = glob.glob(os.path.join(built["src"], "tf_disc", "python",
                                        "libblade_disc_tf*.so"))
    assert "blade_disc_tf/libblade_disc_tf.so" in names
    assert len(built_libs) == 4  # the op library and three kernel tiers
    for lib in built_libs:
        assert "blade_disc_tf/" + os.path.basename(lib) in names
    assert "blade_disc_tf/runtime/disc_abi.h" in names
    assert "blade_disc_tf/runtime/cpu/prelude/disc_prelude.h" in names   # the prelude
    assert "blade_disc_tf/runtime/cpu/prelude/disc_math.h" in names
    assert "blade_disc_tf/runtime/host/disc_host.h" in names       # the host helpers
    assert "blade_disc_tf/runtime/host/disc_gemm.h" in names
    assert "blade_disc_tf/compiler/__init__.py" in names
    assert f"Requires-Dist: tensorflow=={tf.__version__}\n" in metadata
    cp = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert f"Tag: {cp}-{cp}-linux_x86_64" in wheel_info
    assert "Root-Is-Purelib: false" in wheel_info


def test_installed_wheel_compiles_dynamic_shapes(installed, tmp_path):
    site = os.path.realpath(installed["venv"])
    env = _env(str(tmp_path / "cache"))
    (tmp_path / "run.py").write_text(INSTALLED_SCRIPT)
    out = _last_json_line(_run([installed["python"], "run.py"], cwd=str(tmp_path),
                               env=env, timeout=600))
    # Everything comes from the venv, nothing from a checkout (an editable
    # install elsewhere on the system would supply modules the wheel lacks).
    assert any(m.endswith(os.path.join("compiler", "build", "command.py"))
               for m in out["modules"])
    for path in out["modules"] + [out["library"], out["include_dir"]]:
        assert os.path.realpath(path).startswith(site + os.sep), path
    assert os.path.isfile(os.path.join(out["include_dir"], "disc_abi.h"))
    assert os.path.isfile(os.path.join(out["include_dir"], "cpu", "prelude", "disc_prelude.h"))
    clusters = out["clusters"]
    assert len(clusters) == 1, clusters
    (counters,) = clusters.values()
    assert counters["runs"] == 3, counters
    assert counters["compiles"] == 1, counters
    assert counters["fallbacks"] == 0, counters
    # The GEMM ran the venv's kernel library for this CPU.
    assert out["cpu"]["kernels"] in ("x86-64-v2", "avx2", "avx512"), out["cpu"]
    # An installed package without its library: reinstall, not build_ops.py.
    assert "reinstall" in out["missing_library_message"]
    assert "build_ops.py`" not in out["missing_library_message"]


def test_editable_install_builds_nothing(tmp_path):
    src = _copy_sources(str(tmp_path / "src"))
    env = _env(str(tmp_path / "cache"))
    python = _venv(str(tmp_path / "venv"), env)
    _run([python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "-e", src],
         cwd=str(tmp_path), env=env, timeout=300)
    assert not glob.glob(os.path.join(src, "tf_disc", "python", "*.so"))
    assert not os.path.exists(os.path.join(src, "build"))
    (tmp_path / "run.py").write_text(EDITABLE_SCRIPT)
    out = _last_json_line(_run([python, "run.py"], cwd=str(tmp_path), env=env, timeout=300))
    assert out["package"] == os.path.join(src, "tf_disc", "python", "__init__.py")
    # A checkout without its library: the message names its build script.
    build_script = os.path.join(src, "tf_disc", "build_ops.py")
    assert f"run `python {build_script}`" in out["message"]
