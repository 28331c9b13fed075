#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS (default 60) on seeds from the tests and the corpus; stops at the
# first crash (the reproducer is left in fuzz-work/<target>/ as crash-*). Usage: fuzz/run.sh BUILD [SECONDS] [TARGET...]
set -euo pipefail
BUILD=$(cd "${1:?usage: fuzz/run.sh BUILD [SECONDS] [TARGET...]}" && pwd)
SECONDS_EACH=${2:-60}
shift $(( $# >= 2 ? 2 : 1 ))
cd "$(dirname "$0")/.."
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(fuzz_read fuzz_pipeline fuzz_manifest fuzz_safetensors)
CORPUS=${UOPC_CORPUS:-../shared/corpus}
for t in "${TARGETS[@]}"; do
  work="$BUILD/fuzz-work/$t"
  mkdir -p "$work/corpus"
  if [ "$t" = fuzz_manifest ]; then
    cp fuzz/seeds/manifest/*.json "$work/corpus/"
  elif [ "$t" = fuzz_safetensors ]; then
    cp fuzz/seeds/safetensors/*.safetensors "$work/corpus/"
  else
    for f in test/lit/*/Inputs/*.json test/lit/*/Inputs/*.uopir; do cp "$f" "$work/corpus/$(echo "$f" | tr / _)"; done
    if [ -d "$CORPUS/public" ]; then
      for d in "$CORPUS"/public/*/; do
        f="$d/graph.json"
        [ -f "$f" ] && [ "$(stat -c %s "$f")" -lt 200000 ] && cp "$f" "$work/corpus/$(basename "$d").json"
      done
    fi
  fi
  echo "== $t: ${SECONDS_EACH} s"
  if [ "$SECONDS_EACH" = 0 ]; then # only the seeds, once
    (cd "$work" && "$BUILD/$t" -runs=0 -rss_limit_mb=4096 corpus)
  else
    (cd "$work" && "$BUILD/$t" -max_total_time="$SECONDS_EACH" -rss_limit_mb=4096 -max_len=262144 -print_final_stats=1 corpus)
  fi
done
