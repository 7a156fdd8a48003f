"""CI slice of the differential fuzzer: a fixed seed, a bounded number of
random graphs, each compared against stock TF (python -m tests.fuzz runs more)."""
import os

CI_CASES = int(os.environ.get("DISC_FUZZ_CI_CASES", "16"))
CI_SEED = int(os.environ.get("DISC_FUZZ_CI_SEED", "20261130"))


def test_generator_is_deterministic_and_uses_the_registry():
    from .generator import Generator, OpCatalog
    cat = OpCatalog()
    assert cat.unary and cat.binary, "no elementwise families found in the registry"
    a = Generator(cat, 7).generate().describe()
    assert a == Generator(cat, 7).generate().describe()
    ops = {s.op for seed in range(200) for s in Generator(cat, seed).generate().steps}
    assert len(ops) > 0.6 * (len(cat.unary) + len(cat.binary)), sorted(ops)


def test_unknown_ops_are_skipped():
    from .generator import Generator, OpCatalog
    from blade_disc_tf.compiler.registry import support_table
    table = support_table()
    table["ops"]["SomeFutureOp"] = {"type_attrs": {"T": [1]}, "attr_values": {},
                                    "const_inputs": []}
    cat = OpCatalog(table)
    assert "SomeFutureOp" in cat.skipped
    Generator(cat, 1).generate()


def test_fuzz_ci_slice(disc, tmp_path):
    from .runner import run_cases
    try:
        passed, failures, _ = run_cases(CI_CASES, CI_SEED, cache_dir=str(tmp_path / "fuzz"))
    finally:
        disc.enable(min_cluster_size=2)
    assert not failures, "\n".join(f.reproducer() for f in failures)
    assert passed == CI_CASES
