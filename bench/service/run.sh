#!/usr/bin/env bash
# Service benchmark: sampler-loadgen against sampler-server over loopback.
#   (a) 64 concurrent clients (64 connections) of small gamma requests
#       (256 samples), with
#       batching on (the default flags), on with the delay rule alone
#       (--close_batch_when_idle=false) and off (--max_batch_items 1);
#   (b) one request of 10 million gamma samples (float32), end to end.
# Usage: bench/service/run.sh BIN_DIR OUT_DIR [extra server flags...]
# BIN_DIR: a build directory (binaries under server/ and client/) or a
# bundle (binaries side by side).
# Writes OUT_DIR/{batching_on,batching_off,large_unary,large_stream}.json and
# prints a summary. Only 127.0.0.1; every run bounded in time.
set -euo pipefail
bin=$1; out=$2; shift 2
mkdir -p "$out"
find_bin() { for p in "$bin/$1" "$bin/server/$1" "$bin/client/$1"; do
  [ -x "$p" ] && { echo "$p"; return; }; done; echo "no $1 in $bin" >&2; exit 1; }
server=$(find_bin sampler-server)
loadgen=$(find_bin sampler-loadgen)
samplerctl=$(find_bin samplerctl)
duration=${DURATION:-10s}

start_server() {  # flags... ; sets pid and port
  local log; log=$(mktemp)
  "$server" --listen 127.0.0.1:0 --metrics_listen "" "$@" 2>"$log" &
  pid=$!
  for _ in $(seq 100); do
    port=$(sed -n 's/.*serving on port \([0-9]*\).*/\1/p' "$log")
    [ -n "$port" ] && return 0
    sleep 0.1
  done
  echo "server did not start: $(cat "$log")" >&2; kill "$pid"; exit 1
}
stop_server() { kill -TERM "$pid"; wait "$pid"; }

run() {  # name server-flags -- loadgen-flags
  local name=$1; shift
  local sflags=() ; while [ "$1" != "--" ]; do sflags+=("$1"); shift; done; shift
  start_server "${sflags[@]}"
  "$loadgen" --target "127.0.0.1:$port" --json "$@" > "$out/$name.json"
  stop_server
}

extra=("$@")
run batching_on "${extra[@]}" -- --rpc gamma --gamma_samples 256 \
  --concurrency 64 --channels 64 --duration "$duration" --precision f32
run batching_delay_only "${extra[@]}" --close_batch_when_idle=false -- \
  --rpc gamma --gamma_samples 256 --concurrency 64 --channels 64 --duration "$duration" \
  --precision f32
run batching_off "${extra[@]}" --max_batch_items 1 -- --rpc gamma \
  --gamma_samples 256 --concurrency 64 --channels 64 --duration "$duration" --precision f32
run large_unary "${extra[@]}" -- --rpc gamma --gamma_samples 10000000 \
  --concurrency 1 --requests 5 --precision f32 --deadline 120s
# (b) again through the streaming RPC, timed end to end by the client.
start_server "${extra[@]}"
t0=$(date +%s.%N)
"$samplerctl" --target "127.0.0.1:$port" --timeout 120s \
  --precision f32 gamma --shape 1.5 --count 10000000 --stream --seed 1 \
  > "$out/large_stream.txt"
t1=$(date +%s.%N)
stop_server
echo "{\"seconds\": $(awk "BEGIN{print $t1 - $t0}")}" > "$out/large_stream.json"
echo "wrote $out"
