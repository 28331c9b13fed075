#!/usr/bin/env bash
# Runs every benchmark and prints its figures (never asserted). Stops with the failing benchmark's exit
# status when one fails.
#   bench/run.sh [--quick] [BUILD_DIR]
# --quick: small sizes and one repetition each (what the `bench-quick` ctest runs, so that a benchmark that
# stops working fails the suite).
set -euo pipefail
QUICK=()
if [ "${1:-}" = "--quick" ]; then
  QUICK=(--quick)
  shift
fi
# BUILD_DIR is taken relative to where the script was called from (default: build/ of this checkout)
if [ $# -gt 0 ]; then
  [ -d "$1" ] || { echo "bench/run.sh: error: no build directory '$1'" >&2; exit 1; }
  BUILD=$(cd "$1" && pwd)
fi
cd "$(dirname "$0")/.."
BUILD=${BUILD:-$PWD/build}
CORPUS=${UOPC_CORPUS:-../shared/corpus}
found=0
for b in "$BUILD"/bench_*; do
  [ -x "$b" ] && [ -f "$b" ] || continue
  found=1
  echo "== $(basename "$b")"
  args=("${QUICK[@]}")
  # only the benchmarks that read the corpus take --corpus (each says so in its --help)
  if "$b" --help | grep -q -- '--corpus'; then args+=(--corpus "$CORPUS"); fi
  "$b" "${args[@]}"
done
if [ "$found" = 0 ]; then
  echo "bench/run.sh: error: no bench_* binaries in $BUILD (build first)" >&2
  exit 1
fi
REPS=()
SIZES=()
if [ ${#QUICK[@]} -gt 0 ]; then
  REPS=(--reps 1)
  SIZES=(--sizes 512 --repeat 1)
fi
for target in c llvm ptx; do
  echo "== compile time against tinygrad (schedule_s + codegen_s), --target $target"
  /usr/bin/python3 bench/compile_vs_tinygrad.py --uopc "$BUILD/uopc" --corpus "$CORPUS" --target "$target" "${REPS[@]}"
done
echo "== rangeify scaling (generated elementwise chains)"
/usr/bin/python3 bench/rangeify_scaling.py --uopc "$BUILD/uopc" "${SIZES[@]}"
if [ ${#QUICK[@]} -eq 0 ]; then # about 4 minutes of cc: not in --quick (test/lit/targets/c-deep-chain-split.test is the small case)
  echo "== a 1,000,000-op elementwise chain end to end through C (the kernel size bound: 50 kernels)"
  /usr/bin/python3 bench/deep_chain.py --uopc "$BUILD/uopc" --uopc-run "$BUILD/uopc-run"
fi
echo "== a C library with its weights inside (bench/library_weights.py: a generated MLP of 256 MB, uopc and the README's build)"
/usr/bin/python3 bench/library_weights.py --uopc "$BUILD/uopc" --uopc-run "$BUILD/uopc-run" "${QUICK[@]}"
echo "== compile time against the number of devices (500 and 2,000 devices; linear: about 4x)"
/usr/bin/python3 test/lit/cli/Inputs/scaling.py "$BUILD/uopc" test/lit/cli/Inputs/many-devices.py 500 2000 1e9 --emit manifest
echo "== whole networks against ONNX Runtime, OpenVINO and tinygrad 0.14.0 (bench/networks.py; the venv of scripts/setup-python.sh)"
VENV_PY="$BUILD/tinygrad-venv/bin/python"
# (made by `make test`'s exporter test or scripts/setup-python.sh; not made here, where two ctest jobs could race)
if [ -x "$VENV_PY" ] && "$VENV_PY" -c "import tinygrad, onnx, onnxruntime, uopc_tinygrad" 2> /dev/null; then
  NET=()
  [ ${#QUICK[@]} -gt 0 ] && NET=(--quick)
  "$VENV_PY" bench/networks.py --uopc "$BUILD/uopc" --uopc-run "$BUILD/uopc-run" --work "$BUILD/networks" "${NET[@]}"
else
  echo "skipped: no virtual environment with tinygrad, onnx and onnxruntime at $BUILD/tinygrad-venv (scripts/setup-python.sh makes it)"
fi
echo "== kernel speed against tinygrad's own kernels (perf-run; needs a tinygrad d1c3ae0f91 checkout in \$UOPC_TINYGRAD)"
/usr/bin/python3 bench/kernels.py --uopc "$BUILD/uopc" --uopc-run "$BUILD/uopc-run" "${QUICK[@]}"
echo "== uopc --tune against the default compile (perf-run; bench/tune.py: the search's seconds, default and tuned ms)"
/usr/bin/python3 bench/tune.py --uopc "$BUILD/uopc" --uopc-run "$BUILD/uopc-run" "${QUICK[@]}"
