"""The kernel policy's word (tf_disc/runtime/cpu/kernel_policy.h) and the op
library's environment unit (runtime/environment.h): kernel_policy_check.cc,
compiled here against kernel_policy.cc and environment.cc alone, run under
environments that set and unset the variables the op library keeps."""
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


@pytest.fixture(scope="module")
def check(tmp_path_factory):
    exe = str(tmp_path_factory.mktemp("policy") / "kernel_policy_check")
    subprocess.run(["c++", "-std=c++17", "-O1", "-Wall", "-Werror", "-I", ROOT,
                    os.path.join(HERE, "kernel_policy_check.cc"),
                    os.path.join(ROOT, "tf_disc", "runtime", "cpu", "kernel_policy.cc"),
                    os.path.join(ROOT, "tf_disc", "runtime", "environment.cc"), "-o", exe],
                   check=True, capture_output=True, text=True)
    return exe


@pytest.mark.parametrize("variables,expected", [
    ({"DISC_MAX_CPU_ISA": "avx2", "DISC_SELF_GUARD": "off", "TMPDIR": "/var/tmp"},
     ["avx2", "0", "/var/tmp"]),
    ({"DISC_SELF_GUARD": "1", "TMPDIR": "relative"}, ["", "1", "/tmp"]),
    ({}, ["", "1", "/tmp"]),
])
def test_policy_word_and_environment(check, variables, expected):
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISC_MAX_CPU_ISA", "DISC_SELF_GUARD", "TMPDIR")}
    env.update(variables)
    proc = subprocess.run([check, *expected], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout
