"""Runs a transformer variant over many dynamic shapes with blade_disc_tf and
against stock TF, collecting what the examples print and tests/models
asserts: clustering coverage, compiles per cluster, fallbacks, the largest
difference from TF."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np
import tensorflow as tf

from . import coverage
from .keras_transformer import KerasTransformer
from .transformer import Config, make_weights, next_token_logits, signature_ids, transformer

Inputs = Tuple[np.ndarray, ...]


@dataclass
class Variant:
    """A model as a tf.function (what blade_disc_tf optimizes) and the same
    Python function run eagerly (stock TF, op by op)."""
    name: str
    function: Callable
    eager: Callable
    make_inputs: Callable[[int, int, int], Inputs]  # (batch, seq, seed)


@dataclass
class Report:
    coverage: coverage.Coverage
    compiles: Dict[str, int] = field(default_factory=dict)  # per cluster
    disk_loads: Dict[str, int] = field(default_factory=dict)  # per cluster, from disk cache
    fallbacks: Dict[str, int] = field(default_factory=dict)  # reason -> count
    max_abs_diff: float = 0.0
    max_rel_diff: float = 0.0  # max |ours - tf| / max |tf| per shape


def _ids(vocab: int, with_mask: bool) -> Callable[[int, int, int], Inputs]:
    def make(batch: int, seq: int, seed: int) -> Inputs:
        rng = np.random.default_rng(seed)
        ids = rng.integers(0, vocab, (batch, seq)).astype(np.int32)
        if not with_mask:
            return (ids,)
        lengths = rng.integers(1, seq + 1, (batch, 1))
        return ids, (np.arange(seq)[None, :] < lengths).astype(np.int32)
    return make


def encoder_variants(config: Config) -> List[Variant]:
    """BERT-style encoder: raw TF ops and Keras layers, (ids, mask) -> hidden."""
    weights = make_weights(config)
    keras_model = KerasTransformer(config)

    def raw(ids, mask):
        return transformer(ids, mask, weights, config)

    def with_keras(ids, mask):
        return keras_model(ids, mask)

    return [Variant(name, tf.function(fn, input_signature=signature_ids()), fn,
                    _ids(config.vocab, True)) for name, fn in (("raw TF ops", raw),
                                                               ("Keras layers", with_keras))]


def decoder_variants(config: Config) -> List[Variant]:
    """GPT-style decoder: raw TF ops and Keras layers, ids -> next-token logits."""
    weights = make_weights(config)
    keras_model = KerasTransformer(config)

    def raw(ids):
        return next_token_logits(ids, weights, config)

    spec = signature_ids()[:1]
    return [Variant(name, tf.function(fn, input_signature=spec), fn, _ids(config.vocab, False))
            for name, fn in (("raw TF ops", raw), ("Keras layers", keras_model.next_token_logits))]


def run(variant: Variant, shapes: Sequence[Tuple[int, int]]) -> Report:
    """First shape under coverage.measure (the function's first call), then
    every shape compared with eager TF; blade_disc_tf must be enabled."""
    import blade_disc_tf as disc

    disc.reset_stats()
    first = variant.make_inputs(*shapes[0], 0)
    report = Report(coverage.measure(lambda: variant.function(*first)))
    for seed, shape in enumerate(shapes):
        inputs = variant.make_inputs(*shape, seed)
        got = variant.function(*inputs).numpy()
        want = variant.eager(*inputs).numpy()
        diff = float(np.max(np.abs(got - want), initial=0.0))
        report.max_abs_diff = max(report.max_abs_diff, diff)
        report.max_rel_diff = max(report.max_rel_diff,
                                  diff / max(float(np.max(np.abs(want), initial=0.0)), 1e-30))
    for name, c in disc.stats()["clusters"].items():
        report.compiles[name] = c["compiles"]
        report.disk_loads[name] = c["disk_cache_hits"]
        for reason, n in c["fallback_reasons"].items():
            report.fallbacks[reason] = report.fallbacks.get(reason, 0) + n
    return report


def shapes(count: int, max_batch: int, max_seq: int, seed: int = 0) -> List[Tuple[int, int]]:
    """`count` distinct (batch, seq) pairs: (1, 1) first, then random ones."""
    rng = np.random.default_rng(seed)
    out = [(1, 1)]
    while len(out) < count:
        shape = (int(rng.integers(1, max_batch + 1)), int(rng.integers(1, max_seq + 1)))
        if shape not in out:
            out.append(shape)
    return out


def describe(variant: Variant, report: Report, n_shapes: int) -> str:
    """The lines the examples print."""
    lines = [f"{variant.name}: {n_shapes} shapes", "  coverage: " + report.coverage.summary()]
    for name, n in report.compiles.items():
        lines.append(f"  {name}: {n} compile(s), {report.disk_loads[name]} disk-cache load(s)")
    if report.fallbacks:
        lines.append(f"  fallbacks to TF: {report.fallbacks}")
    lines.append(f"  max |ours - stock TF|: {report.max_abs_diff:.3g} "
                 f"(relative to max |TF|: {report.max_rel_diff:.3g})")
    return "\n".join(lines)


def example_main(causal: bool, doc: str) -> None:
    """The command line both examples share: --layers, --hidden, --shapes."""
    import argparse

    import blade_disc_tf as disc

    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--shapes", type=int, default=20)
    args = parser.parse_args()
    disc.enable(async_compile=False)  # the report counts compiles per cluster
    config = Config(hidden=args.hidden, heads=max(1, args.hidden // 32), ffn=4 * args.hidden,
                    layers=args.layers, vocab=1000, max_positions=256, causal=causal)
    batch_shapes = shapes(args.shapes, max_batch=8, max_seq=256)
    variants = decoder_variants(config) if causal else encoder_variants(config)
    for variant in variants:
        print(describe(variant, run(variant, batch_shapes), len(batch_shapes)))
