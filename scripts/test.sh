#!/usr/bin/env bash
# The test command (README, .ci/run): sets up what is missing, runs the Bazel
# build and Bazel tests (README "Bazel") when bazel is installed, the
# AVX2-capped subset on AVX-512 machines, then pytest.
# Extra arguments go to pytest (and skip the Bazel part unless DISC_BAZEL=1);
# DISC_BAZEL=0 skips it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if ! "$PY" -c "import tensorflow, pytest, blade_disc_tf" >/dev/null 2>&1; then
  bash scripts/setup.sh --no-example
fi
# Test this checkout, not another one an earlier editable install points at.
here_pkg="$(pwd)/tf_disc/python"
installed_pkg=$("$PY" -c "import os, blade_disc_tf; print(os.path.dirname(os.path.realpath(blade_disc_tf.__file__)))")
if [[ "$installed_pkg" != "$(realpath "$here_pkg")" ]]; then
  "$PY" -m pip install -q --no-build-isolation --no-deps -e .
fi
"$PY" tf_disc/build_ops.py          # a no-op when the library is up to date
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
bazel_default=1
[[ $# -gt 0 ]] && bazel_default=0
if [[ "${DISC_BAZEL:-$bazel_default}" == 1 ]]; then
  if ! command -v bazel >/dev/null 2>&1; then
    echo "test.sh: bazel is not installed: Bazel build and tests skipped" >&2
  else
    # The python the repository rule reads tf.sysconfig with (and py_test uses).
    [[ -n "${PYTHON:-}" ]] && export PYTHON_BIN_PATH="$(command -v "$PY")"
    start=$SECONDS
    bazel build //tf_disc/...
    bazel test //tests/...
    echo "test.sh: Bazel build + tests took $((SECONDS - start)) s"
  fi
fi

# On a CPU above AVX2, the end-to-end and serving tests run once more under
# DISC_MAX_CPU_ISA=avx2 (README "CPUs"): the AVX2 kernel library, AVX2
# generated code and AVX2 embedded executables, as on an AVX2-only server.
if [[ $# -eq 0 ]]; then
  host_tier=$("$PY" -c "from blade_disc_tf.compiler.build import isa; print(isa.host_tier())")
  if [[ "$host_tier" == avx512* ]]; then
    start=$SECONDS
    DISC_MAX_CPU_ISA=avx2 "$PY" -m pytest tests/e2e tests/serving/test_conversion.py \
      -q -p no:cacheprovider
    echo "test.sh: the AVX2-capped run took $((SECONDS - start)) s"
  fi
fi

# pytest last, so that its summary is the closing line.
"$PY" -m pytest tests -q -p no:cacheprovider "$@"
