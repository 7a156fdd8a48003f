"""The runtime headers generated code includes (runtime/host/, the host
helpers of any target; runtime/cpu/prelude/, the CPU kernels' prelude): each
compiles on its own with the kernels' flags for the AVX2 and the AVX-512
tier, every kernel error code the prelude sets has the host's message, and
their bytes (disc_abi.h's too) are part of the disk cache key and so of
every request key."""
import os
import re
import shutil
import subprocess

import pytest

from blade_disc_tf.compiler.build import cache, headers, isa, request_index
from blade_disc_tf.compiler.build.command import BASE_FLAGS, include_dir
from blade_disc_tf.compiler.codegen.cpu.prelude import PRELUDE_HEADER

CXX = os.environ.get("CXX", "c++")
CPU_HEADERS = sorted(h for h in headers.runtime_headers() if h.startswith("cpu" + os.sep))
HOST_HEADERS = sorted(h for h in headers.runtime_headers() if h.startswith("host" + os.sep))
HOST_HEADER = os.path.join("host", "disc_host.h")


def _tier_flags(tier: str) -> tuple:
    """The tier's flags, or a skip when the compiler cannot target it."""
    flags = isa.tier_flags(CXX, tier)
    probe = subprocess.run([CXX, *flags, "-E", "-x", "c++", os.devnull],
                           capture_output=True, stdin=subprocess.DEVNULL)
    if probe.returncode != 0:
        pytest.skip(f"{CXX} cannot target {tier}: {probe.stderr.decode()[:200]}")
    return flags


def test_prelude_is_a_cpu_header():
    assert PRELUDE_HEADER in CPU_HEADERS
    assert len(CPU_HEADERS) >= 2          # the prelude and the math it includes


def test_host_headers_are_found():
    assert HOST_HEADER in HOST_HEADERS
    assert os.path.join("host", "disc_gemm.h") in HOST_HEADERS


@pytest.mark.parametrize("tier", ["avx2", "avx512"])
@pytest.mark.parametrize("header", CPU_HEADERS + HOST_HEADERS)
def test_header_compiles_alone(header, tier):
    flags = [f for f in BASE_FLAGS if f != "-shared"]
    cmd = [CXX, *flags, *_tier_flags(tier), "-fsyntax-only", "-Werror", "-I", include_dir(),
           "-x", "c++", os.path.join(include_dir(), header)]
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr


def test_every_kernel_error_code_has_a_message():
    with open(os.path.join(include_dir(), HOST_HEADER)) as f:
        host = f.read()
    enum = re.search(r"enum : int32_t \{(.*?)\};", host, re.S)
    assert enum, "no kernel error code enum in the host helpers"
    codes = dict(re.findall(r"\b(DISC_KERNEL_ERR_\w+) = (\d+),", enum.group(1)))
    assert len(codes) >= 2 and len(set(codes.values())) == len(codes)
    report = host[host.index("disc_kernel_error("):]
    for name in codes:                      # each code has its case and message
        assert re.search(rf"case {name}:\s*return disc_fail\(rt, DISC_ERROR_\w+,\s*\"[^\"]+\"",
                         report), name
    with open(os.path.join(include_dir(), PRELUDE_HEADER)) as f:
        prelude = f.read()
    sets = re.findall(r"\berr = (\w+);", prelude)
    assert sets and all(value in codes for value in sets), sets


@pytest.fixture
def include_copy(tmp_path, monkeypatch):
    """A copy of the include dir that headers (and so the cache key) read."""
    root = str(tmp_path / "runtime")
    shutil.copytree(include_dir(), root, ignore=shutil.ignore_patterns("*.cc", "*.map"))
    monkeypatch.setattr(headers, "include_dir", lambda: root)
    return root


def _keys() -> tuple:
    extra = isa.tier_flags(CXX, "avx2")
    req = request_index.request_key({"inputs": []}, b"fdef", "", "target=cpu", CXX, extra, 30.0)
    return cache.cache_key("int x;", "target=cpu", CXX, extra), req


@pytest.mark.parametrize("header", ["disc_abi.h", PRELUDE_HEADER, "cpu/prelude/disc_math.h",
                                    HOST_HEADER])
def test_editing_a_header_changes_the_keys(include_copy, header):
    before = _keys()
    assert _keys() == before
    with open(os.path.join(include_copy, header), "ab") as f:
        f.write(b"\n// edited\n")
    after = _keys()
    assert after[0] != before[0] and after[1] != before[1]


def test_a_new_cpu_header_changes_the_keys(include_copy):
    before = _keys()
    with open(os.path.join(include_copy, "cpu", "prelude", "disc_extra.h"), "w") as f:
        f.write("#pragma once\n")
    assert _keys()[0] != before[0]
