#!/usr/bin/env bash
# One command from a fresh clone: install the pinned dependencies, build the op
# library against the installed TensorFlow wheel, install blade_disc_tf
# (editable), and run the quickstart example.  `--no-example` skips the last.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

command -v c++ >/dev/null 2>&1 || {
  echo "setup: a C++ compiler is needed (apt-get install g++)" >&2; exit 1; }
"$PY" -m pip install -q -r requirements.txt
"$PY" tf_disc/build_ops.py
"$PY" -m pip install -q --no-build-isolation --no-deps -e .
if [[ "${1:-}" != "--no-example" ]]; then
  "$PY" examples/quickstart.py
fi
