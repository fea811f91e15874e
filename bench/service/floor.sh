#!/usr/bin/env bash
# The service against the floor of its RPC stack (issue 13), in one run on
# one host: the floor server (floor_server.cc: same messages, no sampling),
# sampler-server on the CPU backend and, where a GPU is usable, on the CUDA
# backend, each driven with the same prebuilt gRPC frames by h2load (a load
# generator nobody here wrote) and, for small requests, by sampler-loadgen.
#
#   bench/service/floor.sh BIN_DIR OUT_DIR
#
# BIN_DIR: a build directory (binaries under server/, client/ and
# bench/service/) or a bundle (binaries side by side, h2load among them or
# on PATH). Writes OUT_DIR/<server>/<case>.{h2load.txt,log} (h2load's output
# and per-request log), OUT_DIR/<server>/<case>.errors (gRPC calls that did
# not end OK, from sampler-server's metrics: h2load counts HTTP statuses,
# and gRPC errors arrive with HTTP 200), OUT_DIR/<server>/loadgen_*.json and
# OUT_DIR/host.txt; bench/service/floor_report.py turns them into the
# report. Servers run on CPUs 0..N-5, the load generators on the last four,
# so the two do not share cores. Only 127.0.0.1; every run bounded in time.
#   DURATION  seconds of each throughput run (10)
set -euo pipefail
bin=$1
out=$2
mkdir -p "$out"
duration=${DURATION:-10}
find_bin() {
  for p in "$bin/$1" "$bin/server/$1" "$bin/client/$1" "$bin/bench/service/$1"; do
    [ -x "$p" ] && { echo "$p"; return; }
  done
  command -v "$1" || { echo "floor.sh: no $1 in $bin or on PATH" >&2; exit 1; }
}
sampler_server=$(find_bin sampler-server)
floor_server=$(find_bin floor-server)
frames=$(find_bin frames)
loadgen=$(find_bin sampler-loadgen)
h2load=$(find_bin h2load)

cpus=$(nproc)
server_cpus="0-$((cpus > 8 ? cpus - 5 : cpus / 2 - 1))"
client_cpus="$((cpus > 8 ? cpus - 4 : cpus / 2))-$((cpus - 1))"
{
  echo "date: $(date -u +%FT%TZ)"
  echo "cpus: $cpus (servers on $server_cpus, load generators on $client_cpus)"
  grep -m1 'model name' /proc/cpuinfo || true
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
  "$h2load" --version | head -1
} > "$out/host.txt"

frames_dir="$out/frames"
mkdir -p "$frames_dir"
"$frames" write "$frames_dir"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 20000))
}

pid=""
port=""
metrics_port=""
start() {  # name binary flags...
  local name=$1 binary=$2
  shift 2
  local log="$out/$name/server.log"
  mkdir -p "$out/$name"
  taskset -c "$server_cpus" "$binary" --listen 127.0.0.1:0 "$@" 2>"$log" &
  pid=$!
  port=""
  for _ in $(seq 300); do
    port=$(sed -n 's/.*serving on port \([0-9][0-9]*\).*/\1/p' "$log" | head -n1)
    [ -n "$port" ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "floor.sh: $name did not start: $(cat "$log")" >&2
  exit 1
}
stop() {
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# sampler-server's counters of calls that did not end OK, by method and code
# (cumulative; none for the floor, which has no metrics and answers every
# case), so that a run's failed calls can be told apart (h2load resetting
# the streams still in flight when its duration ends shows as CANCELLED).
failed_lines() {
  [ -n "$metrics_port" ] || return 0
  exec 3<>"/dev/tcp/127.0.0.1/$metrics_port"
  printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  grep '^sampler_requests_total{' <&3 | grep -v 'code="OK"' || true
  exec 3>&-
}
failed_calls() { failed_lines | awk '{s += $NF} END {print s + 0}'; }

h2() {  # server case label h2load-args...: files OUT/server/label.*
  local name=$1 case=$2 label=$3
  shift 3
  local method
  method=$(awk -F'\t' -v c="$case" '$1 == c {print $2}' "$frames_dir/cases.tsv")
  local before
  before=$(failed_calls)
  taskset -c "$client_cpus" "$h2load" "http://127.0.0.1:$port$method" \
    -d "$frames_dir/$case.bin" -H 'content-type: application/grpc' \
    -H 'te: trailers' --log-file="$out/$name/$label.log" "$@" \
    > "$out/$name/$label.h2load.txt" 2>&1 || true
  echo $(($(failed_calls) - before)) > "$out/$name/$label.errors"
  failed_lines > "$out/$name/$label.codes"
}

run_server() {  # name binary flags...
  local name=$1
  start "$@"
  # The answers are the size the cases expect (and every call succeeds).
  "$frames" compare --a "127.0.0.1:$port" --b "127.0.0.1:$port" \
    > "$out/$name/compare.txt" 2>&1 || {
    echo "floor.sh: $name failed a case:" >&2
    cat "$out/$name/compare.txt" >&2
    exit 1
  }
  h2 "$name" gamma_256_f32 small_64x1 -c 64 -m 1 -t 4 -D "$duration" \
    --warm-up-time=2
  h2 "$name" gamma_256_f32 small_16x16 -c 16 -m 16 -t 4 -D "$duration" \
    --warm-up-time=2
  for case in gamma_10m_f32 gamma_stream_10m_f32; do
    h2 "$name" "$case" "$case" -c 1 -m 1 -n 10
  done
  h2 "$name" categorical_4096x1024_f32 categorical_4096x1024_f32 -c 1 -m 1 -n 20
  taskset -c "$client_cpus" "$loadgen" --target "127.0.0.1:$port" --json \
    --rpc gamma --gamma_samples 256 --precision f32 --concurrency 64 \
    --channels 64 --duration "${duration}s" \
    > "$out/$name/loadgen_small_64.json" 2>/dev/null || true
  stop
}

metrics_port=""
run_server floor "$floor_server"
for backend in cpu cuda; do
  if [ "$backend" = cuda ] && ! nvidia-smi -L >/dev/null 2>&1; then
    echo "floor.sh: no GPU, no CUDA run" >&2
    continue
  fi
  metrics_port=$(free_port)
  run_server "$backend" "$sampler_server" --backend "$backend" \
    --metrics_listen "127.0.0.1:$metrics_port"
  metrics_port=""
done
echo "floor.sh: results in $out"
