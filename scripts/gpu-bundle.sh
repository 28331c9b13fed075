#!/usr/bin/env bash
# Prepares everything a GPU machine needs to run the corpus with --target ptx, built on this machine:
#   scripts/gpu-bundle.sh [BUILD_DIR] [CORPUS] [OUT] [PERF_RUN]
#   (defaults: build, ../shared/corpus, gpu-bundle, ../shared/perf-run)
# OUT/cases/<set>/<case>/ holds the compiled output (out/: manifest + .ptx), case.json and data/; a case with
# kernels gpu-map spread over blocks (bar.sync in its PTX) also out-blocks0/, the same with gpu-map{blocks=0}.
# OUT/timing/<case>/{blocks,blocks0}/ hold the perf-run cases whose inputs are all float32 and whose PTX has
# blocks, compiled both ways, without data (gpu_check.py fills the inputs): blocks against one thread per row
# at the sizes people run, timed in one run.
# OUT/bin/ holds uopc-run and the shared libraries it needs beyond the C runtime (it never loads LLVM for a
# ptx manifest). On the GPU machine, from the repository root:
#   python3 scripts/gpu_check.py gpu-bundle [--bench N]
# runs every case, compares with tinygrad's expected results and prints the pass count and per-kernel
# times. (The device tool of this project: carry ["gpu-bundle"]; the bundle is ~10 MiB.)
set -euo pipefail
BUILD=${1:-build}
CORPUS=${2:-../shared/corpus}
OUT=${3:-gpu-bundle}
PERF=${4:-../shared/perf-run}
NOBLOCKS="verify,simplify,invalid-pad,multi-lower,reduce-identity,rangeify,kernel-split,schedule,codegen,optimize,lower-index,commit-weak,decompose,gpu-map{blocks=0},group-reduce,linearize"
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/cases"
cp "$BUILD/uopc-run" "$OUT/bin/"
for lib in $(ldd "$BUILD/uopc-run" | awk '/=>/ {print $3}'); do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libstdc++.so*|libgcc_s.so*|libdl.so*|libpthread.so*) ;;
    *) cp -L "$lib" "$OUT/bin/" ;;
  esac
done
n=0
for set in public perf; do
  [ -d "$CORPUS/$set" ] || continue
  for dir in "$CORPUS/$set"/*/; do
    name=$(basename "$dir")
    dest="$OUT/cases/$set/$name"
    mkdir -p "$dest"
    cp "$dir/case.json" "$dest/"
    cp -r "$dir/data" "$dest/"
    "$BUILD/uopc" "$dir/graph.json" -o "$dest/out" --target ptx
    if grep -qs bar.sync "$dest"/out/kernels/*/*.ptx; then
      "$BUILD/uopc" "$dir/graph.json" -o "$dest/out-blocks0" --target ptx --pass-pipeline "$NOBLOCKS"
    fi
    n=$((n + 1))
  done
done
t=0
if [ -d "$PERF/cases" ]; then
  for dir in "$PERF/cases"/*/; do
    name=$(basename "$dir")
    dest="$OUT/timing/$name"
    "$BUILD/uopc" "$dir/graph.json" -o "$dest/blocks" --target ptx
    if grep -qs bar.sync "$dest"/blocks/kernels/*/*.ptx &&
       python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); sys.exit(any(p["role"] != "output" and p["dtype"] != "float32" for p in m["params"]))' "$dest/blocks/manifest.json"; then
      "$BUILD/uopc" "$dir/graph.json" -o "$dest/blocks0" --target ptx --pass-pipeline "$NOBLOCKS"
      t=$((t + 1))
    else
      rm -rf "$dest"
    fi
  done
fi
echo "gpu-bundle: $n cases and $t timing cases in $OUT ($(du -sh "$OUT" | cut -f1))"
