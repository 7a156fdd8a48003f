"""compiler/build/isa.py: tier names, the flags of each tier (explicit -march
levels, a fixed tune, never -march=native), and the tier of a feature set.
Expected values never depend on the CPU running the test."""
from __future__ import annotations

import subprocess

import pytest

from blade_disc_tf.compiler.build import isa
from blade_disc_tf.compiler.build.command import BASE_FLAGS

V3 = ("sse4_2", "popcnt", "avx", "avx2", "fma", "f16c", "bmi1", "bmi2", "movbe")
V4 = V3 + ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")


@pytest.mark.parametrize("name,tier", [("AVX2", "avx2"), ("v3", "avx2"), ("x86-64-v4", "avx512"),
                                       ("avx512_core_bf16", "avx512_bf16"),
                                       ("sse4", "x86-64-v2")])
def test_parse(name, tier):
    assert isa.parse_tier(name) == tier


def test_unknown_tier_named_in_error():
    with pytest.raises(ValueError, match="unknown target ISA 'avx9'"):
        isa.parse_tier("avx9")


def test_order():
    assert isa.lower_tier("avx512", "avx2") == "avx2"
    assert isa.tiers_up_to("avx512") == ("x86-64-v2", "avx2", "avx512")


@pytest.mark.parametrize("features,tier", [
    (("sse4_2", "popcnt"), "x86-64-v2"),
    (V3, "avx2"),
    (V3 + ("avx512f",), "avx2"),  # AVX-512 without BW/DQ/VL is not the avx512 tier
    (V4, "avx512"),
    (V4 + ("avx512_bf16",), "avx512"),  # BF16 without VNNI
    (V4 + ("avx512_bf16", "avx512_vnni", "amx_tile", "avx512_fp16"), "avx512_bf16"),
])
def test_tier_of_features(features, tier):
    assert isa.tier_of_features(features) == tier


@pytest.mark.parametrize("tier", isa.TIERS)
def test_flags_are_explicit(tier):
    flags = isa.tier_flags("c++", tier)
    assert not any("native" in f for f in flags + BASE_FLAGS)
    assert "-mtune=generic" in flags
    assert sum(f.startswith("-march=x86-64-v") for f in flags) == 1


@pytest.mark.parametrize("tier,macros,absent", [
    ("avx2", ("__AVX2__", "__FMA__"), ("__AVX512F__", "__AVX512FP16__")),
    ("avx512", ("__AVX512F__", "__AVX512BW__", "__AVX512VL__"), ("__AVX512FP16__",)),
])
def test_flags_enable_the_tier_and_nothing_above(tier, macros, absent):
    cmd = ["c++", *isa.tier_flags("c++", tier), "-dM", "-E", "-x", "c++", "/dev/null"]
    defined = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    for m in macros:
        assert f"#define {m} " in defined
    for m in absent:
        assert f"#define {m} " not in defined
