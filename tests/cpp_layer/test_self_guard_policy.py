"""The self-guard's routing policy (tf_disc/ops/self_guard.h) on made-up run
times: self_guard_check.cc, compiled here against self_guard.cc alone."""
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def test_self_guard_policy(tmp_path):
    exe = str(tmp_path / "self_guard_check")
    subprocess.run(["c++", "-std=c++17", "-O1", "-Wall", "-Werror", "-I", ROOT,
                    os.path.join(HERE, "self_guard_check.cc"),
                    os.path.join(ROOT, "tf_disc", "ops", "self_guard.cc"), "-o", exe],
                   check=True, capture_output=True, text=True)
    proc = subprocess.run([exe], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stdout
