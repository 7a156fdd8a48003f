"""async_compile's compiles run niced (build/command.py niced): the requests
TF runs meanwhile keep their CPU; the library and its cache key are the same."""
import os
import stat

from blade_disc_tf.compiler.build.cache import build
from blade_disc_tf.compiler.build.command import BACKGROUND_NICE, niced

SOURCE = 'extern "C" int disc_probe() { return 7; }\n'


def _probe_cxx(tmp_path):
    """A C++ compiler that records its niceness, then runs c++."""
    script = tmp_path / "cxx"
    script.write_text(f"#!/bin/sh\nnice > {tmp_path}/niceness\nexec c++ \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_background_compile_is_niced_and_keyed_the_same(tmp_path):
    cxx = _probe_cxx(tmp_path)
    base = os.nice(0)
    _, compiled, key = build([SOURCE], str(tmp_path / "a"), cxx, (), False, 60)
    assert compiled and int((tmp_path / "niceness").read_text()) == base
    _, compiled, same = build([SOURCE], str(tmp_path / "b"), cxx, (), False, 60,
                              background=True)
    assert compiled and same == key
    assert int((tmp_path / "niceness").read_text()) == min(19, base + BACKGROUND_NICE)


def test_niced_leaves_foreground_commands_alone():
    assert niced(["c++", "x.cc"], False) == ["c++", "x.cc"]
    assert niced(["c++", "x.cc"], True)[-4:] == ["-n", str(BACKGROUND_NICE), "c++", "x.cc"]
