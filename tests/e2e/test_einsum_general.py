"""Two-operand Einsum with any label order (Keras MultiHeadAttention's and
EinsumDense's equations among them), missing contracted/free groups (outer
products, matrix-vector) and ellipses that broadcast: clustered, one compile
over many sizes (0 and 1 included), equal to TF, and TF's
InvalidArgumentError when a named label's sizes differ between operands."""
import numpy as np
import pytest
import tensorflow as tf

from graph_inspection import total

EQUATIONS = [
    "BNTS,BSNH->BTNH",  # MHA context
    "BTNH,BSNH->BNTS",  # MHA scores
    "aecd,abcd->acbe",  # Keras 3 MHA scores
    "acbe,aecd->abcd",  # Keras 3 MHA context
    "abc,cde->abde",    # EinsumDense q/k/v projection
    "abcd,cde->abe",    # EinsumDense output projection
    "ij,jk->ki",
    "ijk,ikl->jil",
    "bhqk,bkhd->bqhd",
    "bij,bj->bi",       # matrix-vector: a unit free dim
    "bi,bi->b",         # row dot products: unit free dims on both sides
    "i,j->ij",          # outer product: a unit contracted dim
    "bi,bj->bji",
]


def _assert_one_cluster_one_compile(disc, f):
    ex = disc.explain(f)
    assert not ex.not_clustered and len(ex.clusters) == 1, ex  # the Einsum is inside
    stats = disc.stats()
    assert total(stats, "compiles") == 1, stats
    assert total(stats, "fallbacks") == 0, stats


def _sizes(labels, rng, trial):
    """Random label sizes; trial 1 has a 1-size label, trial 2 a 0-size one."""
    sizes = {c: int(rng.integers(2, 6)) for c in labels}
    if trial in (1, 2):
        sizes[labels[int(rng.integers(0, len(labels)))]] = 2 - trial
    return sizes


@pytest.mark.parametrize("equation", EQUATIONS)
def test_einsum_many_sizes_one_compile(disc, equation):
    lhs, rhs = equation.split("->")[0].split(",")
    labels = sorted(set(lhs + rhs))

    @tf.function(input_signature=[tf.TensorSpec([None] * len(lhs), tf.float32),
                                  tf.TensorSpec([None] * len(rhs), tf.float32)])
    def f(a, b):
        return tf.einsum(equation, a * 0.5, b) + 1.0

    rng = np.random.default_rng(len(equation))
    for trial in range(6):
        sizes = _sizes(labels, rng, trial)
        a = rng.standard_normal([sizes[c] for c in lhs]).astype(np.float32)
        b = rng.standard_normal([sizes[c] for c in rhs]).astype(np.float32)
        got = f(a, b).numpy()
        want = f.python_function(tf.constant(a), tf.constant(b)).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    _assert_one_cluster_one_compile(disc, f)


def test_einsum_label_size_mismatch_is_invalid_argument(disc):
    @tf.function(input_signature=[tf.TensorSpec([None] * 4, tf.float32)] * 2)
    def f(a, b):
        return tf.einsum("BNTS,BSNH->BTNH", a * 0.5, b) + 1.0

    a = np.ones((2, 3, 4, 5), np.float32)
    np.testing.assert_allclose(f(a, np.ones((2, 5, 3, 6), np.float32)).numpy(), 3.5)
    for bad in [(1, 5, 3, 6), (2, 5, 2, 6), (2, 4, 3, 6)]:  # B, N, S differ
        b = np.ones(bad, np.float32)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Expected dimension"):
            f.python_function(tf.constant(a), tf.constant(b))  # stock TF
        with pytest.raises(tf.errors.InvalidArgumentError, match="Expected dimension"):
            f(a, b)
    stats = disc.stats()
    assert total(stats, "compiles") == 1 and total(stats, "fallbacks") == 0, stats


@pytest.mark.parametrize("equation,ranks,shapes", [
    ("...ij,...jk->...ik", (4, 3), [((2, 1, 3, 4), (5, 4, 6)), ((1, 3, 2, 4), (3, 4, 5)),
                                    ((2, 2, 0, 4), (1, 4, 3)), ((3, 4, 1, 2), (4, 2, 2))]),
    ("...ij,jk->...ik", (3, 2), [((2, 3, 4), (4, 5)), ((1, 1, 7), (7, 2)), ((0, 2, 3), (3, 3))]),
    ("b...d,d...->b...", (3, 2), [((2, 3, 4), (4, 3)), ((1, 5, 2), (2, 1)), ((3, 1, 2), (2, 4))]),
])
def test_einsum_ellipsis_broadcasts_like_tf(disc, equation, ranks, shapes):
    @tf.function(input_signature=[tf.TensorSpec([None] * r, tf.float32) for r in ranks])
    def f(a, b):
        return tf.einsum(equation, a * 0.5, b) + 1.0

    rng = np.random.default_rng(7)
    for sa, sb in shapes:
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.standard_normal(sb).astype(np.float32)
        want = f.python_function(tf.constant(a), tf.constant(b)).numpy()
        np.testing.assert_allclose(f(a, b).numpy(), want, rtol=1e-5, atol=1e-5)
    _assert_one_cluster_one_compile(disc, f)


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", ((2, 3), (3, 4))), ("ijk,ikl->jil", ((2, 3, 4), (2, 4, 5))),
    ("...ij,...jk->...ik", ((2, 3, 4), (4, 5))), ("i,j->ij", ((2,), (3,))),
    ("ii,ij->j", ((3, 3), (3, 4))),      # diagonal: TF
    ("ijk,ikl->il", ((2, 3, 4), (2, 4, 5))),  # j summed within one operand: TF
    ("...ij,jk->ik", ((3, 4), (4, 5))),   # ellipsis only on inputs: TF
])
def test_optimizer_clusters_exactly_the_equations_the_compiler_lowers(disc, equation, shapes):
    """The C++ support check (EinsumIsDot) mirrors einsum_plan."""
    from blade_disc_tf.compiler.ops.matmul import einsum_plan

    @tf.function(input_signature=[tf.TensorSpec([None] * len(s), tf.float32) for s in shapes])
    def f(a, b):
        return tf.einsum(equation, a * 0.5, b) + 1.0

    einsum_outside = [n for n in disc.explain(f).not_clustered if n["op"] == "Einsum"]
    lowered = einsum_plan(equation, tuple(len(s) for s in shapes))[0] is not None
    assert lowered == (not einsum_outside), (equation, einsum_outside)
    a, b = (np.ones(s, np.float32) for s in shapes)
    np.testing.assert_allclose(f(a, b).numpy(),
                               f.python_function(tf.constant(a), tf.constant(b)).numpy())
    assert total(disc.stats(), "fallbacks") == 0
