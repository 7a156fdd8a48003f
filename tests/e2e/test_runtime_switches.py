"""The runtime kernels' A/B switches (DISC_GEMM_SKINNY, DISC_GEMM_EPILOGUE,
DISC_CONV_DIRECT) are read from the environment once, not on every GEMM or
convolution; blade_disc_tf.runtime_switches sets them for a block (and
restores them), which is how benchmarks time both settings in one process."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf import _library


def _matmul():
    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)
    def f(a, b):
        return tf.nn.relu(tf.matmul(a, b) + 1.0)
    return f


def test_environment_is_read_once_and_reloaded_on_request(disc, monkeypatch):
    lib = _library.load()
    with disc.runtime_switches():  # the runtime's view: the environment as it is now
        before = lib.runtime_switch("DISC_GEMM_SKINNY")
        a = np.ones((4, 64), np.float32)
        f = _matmul()
        want = f(a, a.T).numpy()
        monkeypatch.setenv("DISC_GEMM_SKINNY", "0")
        np.testing.assert_array_equal(f(a, a.T).numpy(), want)  # a GEMM per call: no re-read
        assert lib.runtime_switch("DISC_GEMM_SKINNY") == before
        with disc.runtime_switches(DISC_GEMM_SKINNY="1", DISC_CONV_DIRECT="0"):
            assert lib.runtime_switch("DISC_GEMM_SKINNY") == "1"
            assert lib.runtime_switch("DISC_CONV_DIRECT") == "0"
            np.testing.assert_array_equal(f(a, a.T).numpy(), want)
        # restored: the environment as before the block, read again
        assert lib.runtime_switch("DISC_GEMM_SKINNY") == "0"
        monkeypatch.delenv("DISC_GEMM_SKINNY")
    assert lib.runtime_switch("DISC_GEMM_SKINNY") == ""


def test_unknown_switch_rejected(disc):
    with pytest.raises(ValueError, match="DISC_NO_SUCH is not a runtime switch"):
        with disc.runtime_switches(DISC_NO_SUCH="0"):
            pass
