"""The runtime kernels' policy (blade_disc_tf.kernel_policy): product
defaults, set for a block through the op library's C API and restored on
exit (nested blocks too), never read from the environment, and an unknown
field or a value a field does not take rejected by name with nothing changed.
That each field changes its kernel path is checked where the path is tested
(test_gemm_*, test_merge_gemm, test_fast_math*, compiler/test_conv_*); here
one field's effect shows that the kernel libraries read the same policy."""
import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf import _library

DEFAULTS = {"skinny_gemm": "on", "gemm_epilogue_fusion": True, "direct_conv": True,
            "conv_transpose_col2im": "auto", "packed_gemm": "auto", "prepack_weights": True,
            "multi_gemm": True, "bf16_gemm": "auto", "kernel_threads": 0}

# One non-default value per field.
CHANGED = {"skinny_gemm": "wide_tile", "gemm_epilogue_fusion": False, "direct_conv": False,
           "conv_transpose_col2im": "on", "packed_gemm": "off", "prepack_weights": False,
           "multi_gemm": False, "bf16_gemm": "on", "kernel_threads": 1}


def _matmul():
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
    def f(a, b):
        return tf.nn.relu(tf.matmul(a, b) + 1.0)
    return f


def test_defaults_are_the_products(disc):
    assert dataclasses.asdict(disc.current_kernel_policy()) == DEFAULTS
    assert dataclasses.asdict(disc.KernelPolicy()) == DEFAULTS
    # the Python view and disc_bridge.h's struct name the same fields, in order
    assert [f.name for f in dataclasses.fields(disc.KernelPolicy)] == \
        [name for name, _ in _library._KernelPolicy._fields_]


@pytest.mark.parametrize("field", sorted(CHANGED))
def test_each_field_set_in_the_runtime_and_restored(disc, field):
    with disc.kernel_policy(**{field: CHANGED[field]}) as policy:
        assert getattr(policy, field) == CHANGED[field]
        # read back from the op library: the kernels' view, not a Python copy
        assert dataclasses.asdict(disc.current_kernel_policy()) == dict(DEFAULTS, **{
            field: CHANGED[field]})
    assert dataclasses.asdict(disc.current_kernel_policy()) == DEFAULTS


def test_nested_blocks_restore_in_order_and_results_agree(disc):
    a = np.ones((4, 64), np.float32)
    f = _matmul()
    want = f(a, a.T).numpy()
    with disc.kernel_policy(skinny_gemm="off", direct_conv=False):
        np.testing.assert_array_equal(f(a, a.T).numpy(), want)
        with disc.kernel_policy(skinny_gemm="wide_tile", kernel_threads=1):
            assert disc.current_kernel_policy() == disc.KernelPolicy(
                skinny_gemm="wide_tile", direct_conv=False, kernel_threads=1)
            np.testing.assert_array_equal(f(a, a.T).numpy(), want)
        assert disc.current_kernel_policy() == disc.KernelPolicy(
            skinny_gemm="off", direct_conv=False)
    assert disc.current_kernel_policy() == disc.KernelPolicy()


def test_policy_reaches_the_kernel_library(disc):
    """The per-tier kernel library reads the op library's policy: a skinny
    product (m = 4) runs on Eigen under skinny_gemm="off", whose blocked
    summation over k = 3000 rounds differently from the skinny kernel's, and
    on the skinny kernel again once the block ends."""
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
    def f(a, b):
        return tf.matmul(a, b) * 2.0

    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3000)).astype(np.float32)
    b = rng.standard_normal((3000, 256)).astype(np.float32)
    skinny = f(a, b).numpy()
    with disc.kernel_policy(skinny_gemm="off"):
        eigen = f(a, b).numpy()
    np.testing.assert_allclose(eigen, skinny, rtol=1e-4, atol=1e-3)
    assert np.any(eigen != skinny)
    np.testing.assert_array_equal(f(a, b).numpy(), skinny)


def test_restored_when_the_block_raises(disc):
    with pytest.raises(RuntimeError, match="inside"):
        with disc.kernel_policy(multi_gemm=False):
            raise RuntimeError("inside")
    assert disc.current_kernel_policy() == disc.KernelPolicy()


def test_environment_is_not_read(disc, monkeypatch):
    """The old variables set before the op library loads (a fresh process)
    or during a run change nothing."""
    monkeypatch.setenv("DISC_GEMM_SKINNY", "0")
    monkeypatch.setenv("DISC_KERNEL_THREADS", "1")
    with disc.kernel_policy():
        assert disc.current_kernel_policy() == disc.KernelPolicy()
    script = ("import dataclasses, blade_disc_tf as disc; "
              "print(dataclasses.asdict(disc.current_kernel_policy()))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == str(DEFAULTS)


@pytest.mark.parametrize("changes,error,match", [
    ({"no_such_field": True}, TypeError, r"unknown kernel policy field\(s\): \['no_such_field'\]"),
    ({"DISC_GEMM_SKINNY": "0"}, TypeError, "DISC_GEMM_SKINNY"),
    ({"skinny_gemm": "w"}, ValueError, "skinny_gemm must be one of"),
    ({"skinny_gemm": 0}, TypeError, "skinny_gemm takes a string"),
    ({"packed_gemm": "yes"}, ValueError, "packed_gemm must be one of"),
    ({"bf16_gemm": None}, TypeError, "bf16_gemm takes a string"),
    ({"gemm_epilogue_fusion": "0"}, TypeError, "gemm_epilogue_fusion takes a bool"),
    ({"direct_conv": 1}, TypeError, "direct_conv takes a bool"),
    ({"kernel_threads": 4}, ValueError, "kernel_threads must be 0"),
    ({"kernel_threads": True}, TypeError, "kernel_threads takes an int"),
])
def test_bad_field_or_value_rejected_by_name(disc, changes, error, match):
    with disc.kernel_policy(multi_gemm=False):
        with pytest.raises(error, match=match):
            with disc.kernel_policy(**dict({"prepack_weights": False}, **changes)):
                pass
        # nothing changed, not even the valid field beside the bad one
        assert disc.current_kernel_policy() == disc.KernelPolicy(multi_gemm=False)


def test_op_library_rejects_out_of_range_fields(disc):
    """The C API checks ranges itself (a caller other than kernel_policy.py)."""
    lib = _library.load()
    bad = dict(disc.KernelPolicy().native(), packed_gemm=7)
    with pytest.raises(ValueError, match="rejected kernel policy"):
        lib.set_kernel_policy(bad)
    assert disc.current_kernel_policy() == disc.KernelPolicy()
