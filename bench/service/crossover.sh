#!/usr/bin/env bash
# Issue 11 item 3: from which request size the CUDA backend beats the CPU
# backend end to end, per kind, on one GPU host. For each backend a server is
# started once; for each kind, sampler-loadgen drives a sweep of request
# sizes (powers of 4) closed-loop at CONCURRENCY requests in flight for
# DURATION each, and writes its JSON report. crossover_report.py turns the
# folder into the table.
#
#   bench/service/crossover.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds sampler-server and sampler-loadgen (a bundle or a build's
# server/ and client/ folders). Loopback only; every run bounded in time.
set -uo pipefail
bin=$1; out=$2
mkdir -p "$out"
find_bin() { for p in "$bin/$1" "$bin/server/$1" "$bin/client/$1"; do
  [ -x "$p" ] && { echo "$p"; return; }; done; echo "no $1 in $bin" >&2; exit 1; }
server=$(find_bin sampler-server)
loadgen=$(find_bin sampler-loadgen)
duration=${DURATION:-2s}
concurrency=${CONCURRENCY:-16}

# kind, the loadgen flag that sizes a request, the sizes, fixed flags.
sweeps=(
  "gamma|--gamma_samples|64 256 1024 4096 16384 65536 262144 1048576|--gamma_shape 2.5 --precision f32"
  "categorical|--categorical_rows|1 4 16 64 256 1024 4096|--categories 256 --draws 1 --precision f32"
  "dirichlet|--dirichlet_rows|4 16 64 256 1024 4096 16384|--dirichlet_dim 16 --dirichlet_alpha 0.5 --precision f32"
  "boards|--board_count|1 4 16 64 256 1024 4096 16384|--board_rows 19 --board_cols 19 --stones 120"
  "enumerate|--problems|1 4 16 64 256 1024|--terms 4 --pmf_len 64 --precision f32"
)

for backend in cpu cuda; do
  log="$out/server_$backend.log"
  "$server" --backend "$backend" --listen 127.0.0.1:0 --metrics_listen "" \
    2> "$log" &
  pid=$!
  port=""
  for _ in $(seq 300); do
    port=$(sed -n 's/.*serving on port \([0-9]*\).*/\1/p' "$log")
    [ -n "$port" ] && break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    echo "crossover: $backend server did not start: $(cat "$log")"
    kill "$pid" 2>/dev/null
    continue
  fi
  for sweep in "${sweeps[@]}"; do
    IFS='|' read -r kind size_flag sizes fixed <<< "$sweep"
    for size in $sizes; do
      # shellcheck disable=SC2086
      timeout 60 "$loadgen" --target "127.0.0.1:$port" --rpc "$kind" \
        $size_flag "$size" $fixed --concurrency "$concurrency" \
        --duration "$duration" --json \
        > "$out/${backend}_${kind}_${size}.json" 2> "$out/${backend}_${kind}_${size}.err"
      echo "$backend $kind $size: rc=$?"
    done
  done
  kill -TERM "$pid"; wait "$pid"
done
nproc > "$out/nproc.txt"
nvidia-smi --query-gpu=name --format=csv,noheader > "$out/gpu.txt" 2>&1
