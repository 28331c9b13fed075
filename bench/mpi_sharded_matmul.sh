#!/usr/bin/env bash
# One process per device, measured (docs/distributed.md): a matmul sharded over two devices along its reduction
# axis (A 8192x16384 float32: 256 MiB per shard; B 16384x512), exported from tinygrad, compiled, run in one process
# and under `mpirun -np 2 -v` (each rank prints its inputs / kernels / transfers / outputs seconds), outputs
# compared; then rank 1 is killed (SIGKILL) mid-run and the time until mpirun ends is printed.
#   bench/mpi_sharded_matmul.sh [BUILD]    (needs BUILD/tinygrad-venv, OpenMPI's mpirun, ~2 GiB of /tmp)
set -euo pipefail
BUILD=$(realpath "${1:-build}")
SRC=$(dirname "$(realpath "$0")")/..
W=$(mktemp -d /tmp/uopc-mpi-mm-XXXXXX)
trap 'rm -rf "$W"' EXIT
export OMPI_MCA_btl_vader_single_copy_mechanism=none XDG_CACHE_HOME="$BUILD/kernel-cache"
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -np 2)
cat > "$W/export_mm.py" <<'PY'
import sys, numpy as np
from tinygrad import Tensor
import uopc_tinygrad
M, K, N = 8192, 16384, 512
rng = np.random.default_rng(0)
a = Tensor(rng.standard_normal((M, K), dtype=np.float32)).shard(("CPU", "CPU:1"), axis=1)
b = Tensor(rng.standard_normal((K, N), dtype=np.float32)).shard(("CPU", "CPU:1"), axis=0)
uopc_tinygrad.export(lambda a, b: a @ b, a, b, out=sys.argv[1])
PY
PYTHONPATH="$SRC/python" "$BUILD/tinygrad-venv/bin/python" "$W/export_mm.py" "$W/exported"
"$BUILD/uopc" "$W/exported/graph.json" -o "$W/out"
RUN=("$BUILD/uopc-run" "$W/out/manifest.json" --inputs "$W/exported/inputs.safetensors")
"${RUN[@]}" --outputs "$W/warm.safetensors" # (builds the kernels into the cache)
/usr/bin/time -f "one process: %e s wall" "${RUN[@]}" --outputs "$W/one.safetensors"
T0=$(date +%s.%N)
/usr/bin/time -f "mpirun -np 2: %e s wall" "${MPIRUN[@]}" "${RUN[@]}" --outputs "$W/two.safetensors" -v
HALF=$(echo "($(date +%s.%N) - $T0) / 2" | bc -l)
cmp "$W/one.safetensors" "$W/two.safetensors" && echo "outputs: identical"
# a rank killed mid-run (half way through a run as long as the one above)
"${MPIRUN[@]}" "${RUN[@]}" --outputs "$W/killed.safetensors" > "$W/kill.out" 2> "$W/kill.err" &
MP=$!
sleep "$HALF"
R1=""
for p in $(pgrep -P $MP); do
  tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && R1=$p
done
if [ -z "$R1" ]; then echo "rank 1 had ended before the kill"; wait $MP || true; exit 0; fi
T0=$(date +%s.%N); kill -9 "$R1"
RC=0; wait $MP || RC=$?
T1=$(date +%s.%N)
echo "rank 1 killed: mpirun exited with status $RC, $(echo "$T1 - $T0" | bc) s after the kill"
grep -m1 "exited on signal" "$W/kill.err" || true
[ ! -e "$W/killed.safetensors" ] && echo "no output written"
