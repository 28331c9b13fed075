#!/usr/bin/env bash
# Prepares everything a GPU machine needs to run the corpus with --target ptx, built on this machine:
#   scripts/gpu-bundle.sh [BUILD_DIR] [CORPUS] [OUT]    (defaults: build, ../shared/corpus, gpu-bundle)
# OUT/cases/<set>/<case>/ holds the compiled output (out/: manifest + .ptx), case.json and data/;
# OUT/bin/ holds uopc-run and the shared libraries it needs beyond the C runtime (it never loads LLVM for a
# ptx manifest). On the GPU machine, from the repository root:
#   python3 scripts/gpu_check.py gpu-bundle [--bench N]
# runs every case, compares with tinygrad's expected results and prints the pass count and per-kernel
# times. (The device tool of this project: carry ["gpu-bundle"]; the bundle is ~10 MiB.)
set -euo pipefail
BUILD=${1:-build}
CORPUS=${2:-../shared/corpus}
OUT=${3:-gpu-bundle}
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
    n=$((n + 1))
  done
done
echo "gpu-bundle: $n cases in $OUT ($(du -sh "$OUT" | cut -f1))"
