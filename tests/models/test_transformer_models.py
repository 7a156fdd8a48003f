"""BERT- and GPT-style transformers (raw TF ops and Keras 3 layers) with
dynamic batch and sequence: nearly every compute op runs inside DiscLaunch,
each cluster compiles once for all shapes, results equal stock TF."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))

from models import harness  # noqa: E402
from models.transformer import Config  # noqa: E402

SMALL = dict(hidden=64, heads=4, ffn=128, layers=2, vocab=97, max_positions=64)
SHAPES = [(1, 1), (3, 17), (2, 40), (5, 9), (1, 64)]

CASES = [
    pytest.param("encoder", 0, id="bert-raw-ops"),
    pytest.param("encoder", 1, id="bert-keras"),
    pytest.param("decoder", 0, id="gpt-raw-ops"),
    pytest.param("decoder", 1, id="gpt-keras"),
]


@pytest.mark.parametrize("kind,index", CASES)
def test_transformer_clustered_compiled_once_and_equal_to_tf(disc, kind, index):
    if kind == "encoder":
        variant = harness.encoder_variants(Config(**SMALL))[index]
    else:
        variant = harness.decoder_variants(Config(causal=True, **SMALL))[index]
    report = harness.run(variant, SHAPES)
    detail = harness.describe(variant, report, len(SHAPES))
    assert report.coverage.share >= 0.95, detail
    assert report.compiles and all(n == 1 for n in report.compiles.values()), detail
    assert not report.fallbacks, detail
    assert report.max_rel_diff <= 2e-5, detail
