#!/usr/bin/env bash
# The GPU validation run (issue 26; GPU-BACKEND-BRIEF.md 4B), from the
# repository root on a GPU machine with numpy and torch (no TF):
#   bash benchmarks/gpu/run.sh [BUNDLE (.gpu)] [OUT ($OUT, else out)]
# Builds libdisc_harness.so with g++ against the bundle's CUDA headers, then
# runs run_cases.py under a time limit; everything is logged to OUT/log.txt.
# --build-only [OUT]: only the harness build (the CPU-side smoke test).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_ONLY=0
if [[ "${1:-}" == "--build-only" ]]; then BUILD_ONLY=1; shift; fi
BUNDLE="${1:-$ROOT/.gpu}"
# The device runner's $OUT (what it hands back) when set.
OUT="${2:-${OUT:-$ROOT/out}}"
mkdir -p "$OUT"
# Total wall time allowed: the device run must end within 8 minutes.
LIMIT_S="${GPU_HARNESS_LIMIT_S:-450}"
# Test hooks (tests/models/test_gpu_harness_smoke.py runs this script on
# stand-ins): the driver library, extra run_cases.py and compiler flags.
DRIVER="${GPU_HARNESS_DRIVER:-libcuda.so.1}"
read -r -a EXTRA_ARGS <<< "${GPU_HARNESS_ARGS:-}"
read -r -a EXTRA_CXXFLAGS <<< "${GPU_HARNESS_CXXFLAGS:-}"

build_harness() {
  local cuda="$BUNDLE/cuda"
  # The bundle carries the wheel's CUDA 12.5 headers (make_cases.py); a
  # toolkit's headers only when the bundle has none.
  if [[ ! -f "$cuda/include/cuda.h" ]]; then cuda="${CUDA_HOME:-/usr/local/cuda}"; fi
  # No -Werror: the device's compiler may be newer than this repository's.
  "${CXX:-g++}" -std=c++17 -O2 -fPIC -shared -Wall -fvisibility=hidden ${EXTRA_CXXFLAGS[@]+"${EXTRA_CXXFLAGS[@]}"} \
      -I "$ROOT" -I "$cuda/include" -I "$cuda/libcudacxx/include" \
      "$ROOT/benchmarks/gpu/harness.cc" "$ROOT"/tf_disc/runtime/cuda/{cuda_backend,cuda_driver,cublaslt_gemm}.cc \
      -ldl -o "$OUT/libdisc_harness.so"
}

if [[ $BUILD_ONLY == 1 ]]; then
  build_harness
  echo "built $OUT/libdisc_harness.so"
  exit 0
fi

export PYTHONUNBUFFERED=1
{
  date -u
  nvidia-smi -L || true
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  nvcc --version 2>/dev/null | tail -1 || true
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "device", torch.cuda.get_device_name())'
  t0=$SECONDS
  build_harness
  echo "harness built in $((SECONDS - t0))s"
  # Timing stops 60 s before the limit so the table is still written.
  timeout --kill-after=10 "$((LIMIT_S - 20))" \
    python3 "$ROOT/benchmarks/gpu/run_cases.py" --bundle "$BUNDLE" --out "$OUT" \
      --harness "$OUT/libdisc_harness.so" --budget-s "$((LIMIT_S - 80))" --driver "$DRIVER" \
      ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"}
} 2>&1 | tee "$OUT/log.txt"
