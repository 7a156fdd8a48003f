"""Faults of the compile path: each ends in TF's answer through the fallback,
one log line, a counted reason in disc.stats(), no crash and no hang."""
import errno
import logging
import os
import tempfile
import time

import pytest

from helpers import check_against_tf, counter, fake_compiler, reasons, softplus_fn


def _warnings(caplog):
    return [r for r in caplog.records if r.levelno >= logging.WARNING
            and r.name.startswith("blade_disc_tf")]


def test_missing_system_compiler(disc, caplog):
    disc.set_options(cxx="/nonexistent/bin/c++")
    f = softplus_fn()
    with caplog.at_level(logging.WARNING, logger="blade_disc_tf"):
        check_against_tf(f)
    stats = disc.stats()
    assert counter(stats, "compiles") == 0
    (reason,) = reasons(stats)
    assert "cannot run C++ compiler" in reason and "/nonexistent/bin/c++" in reason, reason
    assert reasons(stats)[reason] >= 4
    assert len(_warnings(caplog)) == 1, [r.getMessage() for r in _warnings(caplog)]


def test_compile_timeout_kills_compiler_and_falls_back(disc, tmp_path):
    pidfile = tmp_path / "pid"
    cxx = fake_compiler(tmp_path, f"echo $$ > {pidfile}; sleep 60 & wait")
    disc.set_options(cxx=cxx, compile_timeout_s=1.0)
    f = softplus_fn()
    t0 = time.monotonic()
    try:
        check_against_tf(f)
    finally:
        disc.set_options(cxx="c++", compile_timeout_s=600.0)
    assert time.monotonic() - t0 < 20
    (reason,) = reasons(disc.stats())
    assert "timed out after 1" in reason, reason
    # The subprocess timeout killed the compiler's whole process group, so
    # the compile thread is free again: a new cluster compiles for real.
    deadline = time.monotonic() + 10
    pid = int(pidfile.read_text())
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}"):
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{pid}"), "fake compiler still running"
    disc.set_options(cxx="c++", compile_timeout_s=600.0)
    disc.reset_stats()
    g = tf_fn_other()   # a different cluster: the timed-out key stays failed
    check_against_tf(g)
    assert counter(disc.stats(), "compiles") + counter(disc.stats(), "disk_cache_hits") == 1, \
        disc.stats()


def test_exception_inside_python_compiler(disc, monkeypatch, caplog):
    from blade_disc_tf.compiler import service

    def boom(*a, **k):
        raise RuntimeError("injected compiler bug")

    monkeypatch.setattr(service, "compile_to_units", boom)
    f = softplus_fn()
    with caplog.at_level(logging.WARNING, logger="blade_disc_tf"):
        check_against_tf(f)
    (reason,) = reasons(disc.stats())
    assert "internal compiler error: RuntimeError: injected compiler bug" in reason
    assert len(_warnings(caplog)) == 1, [r.getMessage() for r in _warnings(caplog)]


def test_exception_escaping_compile_request(disc, monkeypatch):
    from blade_disc_tf.compiler import service

    def boom(*a, **k):
        raise KeyboardInterrupt("even BaseException")

    monkeypatch.setattr(service, "compile_request", boom)
    f = softplus_fn()
    check_against_tf(f)
    (reason,) = reasons(disc.stats())
    assert "KeyboardInterrupt" in reason, reason


def _cached(cache_dir):
    return sorted(os.path.join(cache_dir, n) for n in os.listdir(cache_dir) if n.endswith(".so"))


def _copy_cache(src, dst):
    os.makedirs(dst, mode=0o700)
    for n in os.listdir(src):
        if not n.endswith(".lock"):
            with open(os.path.join(src, n), "rb") as a, open(os.path.join(dst, n), "wb") as b:
                b.write(a.read())
            os.chmod(os.path.join(dst, n), 0o600)


@pytest.mark.parametrize("damage", ["truncate", "flip", "no_sidecar", "bad_sidecar",
                                    "group_writable", "other_owner"])
def test_damaged_disk_cache_entry_is_rebuilt(disc, tmp_path, damage, caplog):
    first = str(tmp_path / "cache")
    f = softplus_fn()
    check_against_tf(f)
    (so,) = _cached(first)
    assert os.path.exists(so + ".sha256")
    # Damage a copy (new inodes): the library this process loaded stays intact.
    second = str(tmp_path / "cache2")
    _copy_cache(first, second)
    (so,) = _cached(second)
    if damage == "truncate":
        os.truncate(so, os.path.getsize(so) // 2)
    elif damage == "flip":
        with open(so, "r+b") as fh:
            fh.seek(os.path.getsize(so) // 2)
            byte = fh.read(1)
            fh.seek(-1, 1)
            fh.write(bytes([byte[0] ^ 0xFF]))
    elif damage == "no_sidecar":
        os.unlink(so + ".sha256")
    elif damage == "bad_sidecar":
        with open(so + ".sha256", "w") as fh:
            fh.write("0" * 64 + "\n")
    elif damage == "group_writable":
        os.chmod(so, 0o620)
    elif damage == "other_owner":
        if os.getuid() != 0:
            pytest.skip("needs root to chown")
        os.chown(so, 12345, 12345)
    disc.set_options(cache_dir=second)
    disc.clear_executable_cache()
    disc.reset_stats()
    with caplog.at_level(logging.WARNING, logger="blade_disc_tf"):
        check_against_tf(f)
    stats = disc.stats()
    assert counter(stats, "compiles") == 1 and counter(stats, "disk_cache_hits") == 0, stats
    assert counter(stats, "fallbacks") == 0, reasons(stats)
    assert any("refusing cached library" in r.getMessage() for r in caplog.records)
    # The rebuilt entry is good again: the next process-level miss is a disk hit.
    disc.clear_executable_cache()
    disc.reset_stats()
    check_against_tf(f)
    assert counter(disc.stats(), "disk_cache_hits") == 1, disc.stats()


def test_unwritable_cache_dir_uses_private_dir(disc, caplog):
    # /proc refuses new entries even for root: a truly read-only location.
    disc.set_options(cache_dir="/proc/blade_disc_tf_cache")
    f = softplus_fn()
    with caplog.at_level(logging.WARNING, logger="blade_disc_tf"):
        check_against_tf(f)
    stats = disc.stats()
    # compiled into (or found in, from an earlier test) the private dir
    assert counter(stats, "compiles") + counter(stats, "disk_cache_hits") == 1, stats
    assert counter(stats, "fallbacks") == 0, reasons(stats)
    assert any("private dir" in r.getMessage() for r in caplog.records)


def test_full_cache_dir_uses_private_dir_then_falls_back(disc, tmp_path, monkeypatch):
    from blade_disc_tf.compiler.build import cache

    real = tempfile.mkstemp
    full = {str(tmp_path / "cache")}

    def mkstemp(*a, dir=None, **k):
        if dir in full or "*" in full:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*a, dir=dir, **k)

    monkeypatch.setattr(cache.tempfile, "mkstemp", mkstemp)
    f = softplus_fn()
    check_against_tf(f)
    stats = disc.stats()
    assert counter(stats, "compiles") + counter(stats, "disk_cache_hits") == 1, stats
    assert counter(stats, "fallbacks") == 0, reasons(stats)
    # Every disk full: TF's answer, with the reason counted.
    full.add("*")
    disc.reset_stats()
    g = tf_fn_other()
    check_against_tf(g)
    (reason,) = reasons(disc.stats())
    assert "no space left" in reason.lower(), reason


def tf_fn_other():
    import tensorflow as tf
    return tf.function(lambda x, y: tf.tanh(x) * y + tf.abs(y),
                       input_signature=[tf.TensorSpec([None, None], tf.float32)] * 2)


def test_compiler_hanging_everywhere_honours_timeout(disc, tmp_path):
    """Even the `c++ --version` probe (part of the cache key) is bounded by
    compile_timeout_s, so the compile thread is free again within seconds."""
    path = tmp_path / "hang-c++"
    path.write_text("#!/bin/sh\nexec sleep 60\n")
    path.chmod(0o755)
    disc.set_options(cxx=str(path), compile_timeout_s=1.0)
    try:
        f = softplus_fn()
        t0 = time.monotonic()
        check_against_tf(f)
        (reason,) = reasons(disc.stats())
        assert "timed out" in reason, reason
    finally:
        disc.set_options(cxx="c++", compile_timeout_s=600.0)
    disc.reset_stats()
    g = tf_fn_other()
    check_against_tf(g)
    assert time.monotonic() - t0 < 15
    s = disc.stats()
    assert counter(s, "compiles") + counter(s, "disk_cache_hits") == 1, s
