#!/usr/bin/env bash
# The test command (README, .ci/run): sets up what is missing, then runs pytest.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if ! "$PY" -c "import tensorflow, pytest, blade_disc_tf" >/dev/null 2>&1; then
  bash scripts/setup.sh --no-example
fi
"$PY" tf_disc/build_ops.py          # a no-op when the library is up to date
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
exec "$PY" -m pytest tests -q -p no:cacheprovider "$@"
