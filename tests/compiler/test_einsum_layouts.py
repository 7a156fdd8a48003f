"""General Einsum lowering (ops/matmul.py einsum_plan): attention's
equations become one dot reading and writing the operands' own layouts
(the plan's transposes folded by fold_transposes, no copy kernels), and the
plan's permutations describe the equation."""
import numpy as np
import pytest
import tensorflow as tf

from blade_disc_tf.compiler.ops.matmul import einsum_plan


def _top_ops(tmp_path):
    """Value-producing ops of each final IR dump (general and speculated)."""
    finals = sorted(tmp_path.glob("**/ir_*_assign_buffers.mlir"))
    assert finals
    return [[ln.split(" = ")[1].split("(")[0] for ln in f.read_text().splitlines()
             if ln.startswith("  %") and " = " in ln] for f in finals]


@pytest.mark.parametrize("equation,shapes", [
    ("BNTS,BSNH->BTNH", ((2, 4, 5, 6), (2, 6, 4, 8))),  # context: output layout folded
    ("BTNH,BSNH->BNTS", ((2, 5, 4, 8), (2, 6, 4, 8))),  # scores: head split read in place
    ("aecd,abcd->acbe", ((2, 6, 4, 8), (2, 5, 4, 8))),  # Keras 3 MHA scores
])
def test_attention_einsum_is_one_dot_without_copies(compiler, tmp_path, equation, shapes):
    from blade_disc_tf.compiler.options import CompileOptions

    def fn(a, b):
        return tf.einsum(equation, a, b)

    specs = [tf.TensorSpec([None] * 4, tf.float32)] * 2
    concrete = tf.function(fn).get_concrete_function(*specs)
    reply = compiler.compile(concrete, CompileOptions(cache_dir=compiler.options.cache_dir,
                                                      dump_dir=str(tmp_path)))
    assert reply["ok"], reply
    assert all(ops == ["dot"] for ops in _top_ops(tmp_path)), _top_ops(tmp_path)
    exe, out_dt = compiler.executable(fn, specs)
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    (got,) = exe([a, b], out_dt)
    np.testing.assert_allclose(got, np.einsum(equation, a, b), rtol=1e-5, atol=1e-5)


def test_plan_permutations():
    plan, _ = einsum_plan("BNTS,BSNH->BTNH")
    assert not plan["swap"]
    assert plan["lhs_perm"] == [0, 1, 2, 3]      # B N | T | S
    assert plan["rhs_perm"] == [0, 2, 1, 3]      # B N | S | H
    assert plan["out_perm"] == [0, 2, 1, 3]      # logical B N T H -> B T N H
    plan, _ = einsum_plan("ij,jk->ki")           # swapped: k is the GEMM's lhs side
    assert plan["swap"] and plan["lhs"] == "jk" and plan["out_perm"] == [0, 1]
