"""DiscLaunch on DEVICE_GPU, checked without a GPU: the kernel is
registered, the optimizer clusters GPU-placed graphs only behind the
"device": "gpu" option and marks host-memory args and results so that TF's
MemoryTypesForNode places them in host memory (gpu_placement_check.cc,
linked against the op library), and the option's validation."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, ROOT)

from tf_disc import build_ops  # noqa: E402


@pytest.fixture(scope="module")
def library():
    return build_ops.build(verbose=False)


def test_gpu_kernel_registered(library):
    code = ("import sys, tensorflow as tf\n"
            "from tensorflow.python.framework import kernels\n"
            "tf.load_op_library(sys.argv[1])\n"
            "print(sorted({k.device_type for k in "
            "kernels.get_registered_kernels_for_op('DiscLaunch').kernel}))\n")
    proc = subprocess.run([sys.executable, "-c", code, library], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "['CPU', 'GPU']"


def test_gpu_placement(library, tmp_path):
    import tensorflow as tf

    exe = str(tmp_path / "gpu_placement_check")
    lib_dir = os.path.dirname(library)
    cuda = [flag for d in build_ops.cuda_include_dirs() for flag in ("-I", d)]
    cmd = (["c++", "-O1", "-Wno-deprecated-declarations", "-I", ROOT] + cuda +
           [os.path.join(HERE, "gpu_placement_check.cc"), "-o", exe]
           + tf.sysconfig.get_compile_flags() + [library] + tf.sysconfig.get_link_flags()
           # TF's standard ops (AddV2, Reshape, ...) are registered by
           # libtensorflow_cc, which the op library itself never links.
           + ["-Wl,--no-as-needed", "-l:libtensorflow_cc.so.2", "-Wl,--as-needed",
              f"-Wl,-rpath,{lib_dir}", f"-Wl,-rpath,{tf.sysconfig.get_lib()}"])
    build = subprocess.run(cmd, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-4000:]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([exe], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout + proc.stderr[-3000:]


def test_device_option():
    from blade_disc_tf import config

    assert config.from_environment({}).native_json(True)["device"] == "cpu"
    assert config.from_environment({"DISC_DEVICE": "GPU"}).native_json(True)["device"] == "gpu"
    with pytest.raises(ValueError):
        config.from_environment({"DISC_DEVICE": "tpu"})
