#!/usr/bin/env bash
# Several GPUs on one host (issue 14): sampler-server with --gpus 0 and with
# --gpus 0,1, one after the other, on the same host.
#
#   bench/service/multi_gpu.sh BIN_DIR OUT_DIR
#
# BIN_DIR: a build directory (binaries under server/ and client/) or a
# bundle (binaries side by side). Parts, each bounded in time:
#   identical  the same seeded requests of each kind (samplerctl --json) to
#              each server give byte-identical answers; each is sent twice,
#              one at a time, so that the two-GPU server's round-robin on
#              idle devices runs it once on each GPU (the device seconds per
#              device, from /metrics, show it did)
#   scaling    GPU-bound and wire-bound loads from many clients
#              (sampler-loadgen --json), /metrics before and after each run:
#              device seconds per device and pool bytes per device
#   small      small requests (256 float32 gamma samples, 64 clients)
#   unavailable  GPU 1 made to fail its initialisation (the test-only
#              SAMPLER_TEST_ONLY_FAIL_GPUS): listed as unavailable by
#              GetServerInfo, named in the log, GPU 0 serves; with GPU 0
#              failing too, the server refuses to start
#   poolcap    a 64 MiB pool cap on every GPU: an oversized gamma batch fails
#              with RESOURCE_EXHAUSTED while boards requests on the same
#              server keep succeeding
# With one GPU only the one-GPU server runs ("one GPU: scaling not
# measured"); with none, nothing runs. bench/service/multi_gpu_report.py
# turns OUT_DIR into the report. Only 127.0.0.1.
#   DURATION  seconds of each load run (6)
# For checking this script on a host without GPU (not for figures):
#   BACKEND   the servers' --backend (cuda)
#   GPUS      the GPU count to assume (nvidia-smi's)
#   LOADS     the loads to run, by name (all)
set -uo pipefail
bin=$1
out=$2
mkdir -p "$out"
duration=${DURATION:-6}
here=$(cd "$(dirname "$0")" && pwd)
find_bin() {
  for p in "$bin/$1" "$bin/server/$1" "$bin/client/$1"; do
    [ -x "$p" ] && { echo "$p"; return; }
  done
  echo "multi_gpu.sh: no $1 in $bin" >&2
  exit 1
}
server_bin=$(find_bin sampler-server)
ctl=$(find_bin samplerctl)
loadgen=$(find_bin sampler-loadgen)

gpus=${GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)}
backend=${BACKEND:-cuda}
{
  echo "date: $(date -u +%FT%TZ)"
  echo "cpus: $(nproc)"
  grep -m1 'model name' /proc/cpuinfo || true
  echo "gpus: $gpus"
  echo "backend: $backend; each load run: ${duration} s"
  nvidia-smi --query-gpu=index,name,driver_version,memory.total \
    --format=csv,noheader 2>/dev/null || true
  nvidia-smi topo -m 2>/dev/null || true
} > "$out/host.txt"
if [ "$gpus" -lt 1 ]; then
  echo "no GPU: nothing measured" > "$out/skipped.txt"
  echo "multi_gpu.sh: no GPU, nothing run"
  exit 0
fi
configs="one"
if [ "$gpus" -ge 2 ]; then
  configs="one two"
else
  echo "one GPU: scaling not measured" > "$out/skipped.txt"
fi
gpu_list() { [ "$1" = one ] && echo 0 || echo 0,1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

pid=""
port=""
metrics_port=""
# start NAME FLAGS...: a server logging to OUT/NAME.server.log; 1 when it
# exits before serving.
start() {
  local name=$1
  shift
  local log="$out/$name.server.log"
  metrics_port=$(free_port)
  "$server_bin" --backend "$backend" --listen 127.0.0.1:0 \
    --metrics_listen "127.0.0.1:$metrics_port" "$@" 2>"$log" &
  pid=$!
  port=""
  for _ in $(seq 300); do
    port=$(sed -n 's/.*serving on port \([0-9][0-9]*\).*/\1/p' "$log" | head -n1)
    [ -n "$port" ] && return 0
    kill -0 "$pid" 2>/dev/null || { wait "$pid"; return 1; }
    sleep 0.1
  done
  echo "multi_gpu.sh: $name did not start in 30 s" >&2
  return 1
}
stop() {
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
scrape() {  # FILE: the server's /metrics
  python3 - "$metrics_port" "$1" <<'EOF'
import sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics",
                            timeout=10) as r:
    open(sys.argv[2], "wb").write(r.read())
EOF
}

# The requests of the identity part: samplerctl flags per case.
weights=$(python3 -c 'import random; r=random.Random(14); print(";".join(",".join(str(round(r.random(),4)) for _ in range(100)) for _ in range(64)))')
declare -A cases=(
  [gamma_f32]="--precision f32 gamma --shape 0.7 --count 200000"
  [gamma_f64]="--precision f64 gamma --shape 3.5 --scale 2 --count 100000"
  [dirichlet_f64]="--precision f64 --rows 2000 dirichlet --alpha 0.3,1,2.5,7"
  [categorical_f32]="--precision f32 categorical --draws 16 --weights $weights"
  [boards]="--rows 19 boards --cols 19 --stones 100,100 --count 500"
  [enumerate_f64]="--precision f64 enumerate --pmf 0.1,0.2,0.3,0.4 --pmf 2:0.5,0.25,0.25 --pmf 0.05,0.15,0.3,0.3,0.15,0.05 --pmf 1:0.9,0.1"
)
identical() {  # NAME
  local dir="$out/$1/identical"
  mkdir -p "$dir"
  scrape "$dir/metrics_before.txt"
  "$ctl" --target "127.0.0.1:$port" --json info > "$dir/info.json" 2>&1
  for c in "${!cases[@]}"; do
    for round in 1 2; do
      # shellcheck disable=SC2086
      timeout 60 "$ctl" --target "127.0.0.1:$port" --json --seed 1414 \
        --timeout 50s ${cases[$c]} > "$dir/$c.$round.json" 2> "$dir/$c.$round.err"
      echo "$? $(sha256sum < "$dir/$c.$round.json" | cut -c1-64)" \
        > "$dir/$c.$round.sum"
    done
  done
  scrape "$dir/metrics_after.txt"
}

# The loads of the scaling part: sampler-loadgen flags per load. Enumerate
# with many mid-length terms is compute-bound (pairs grow with the square of
# terms x length, the bytes linearly); float32 gamma and categorical are
# bound by the wire and protobuf, and show what two GPUs do for them.
declare -A loads=(
  [enumerate_f32_1024x256]="--rpc enumerate --precision f32 --problems 1 --terms 1024 --pmf_len 256 --concurrency 32 --channels 8"
  [enumerate_f64_512x256]="--rpc enumerate --precision f64 --problems 1 --terms 512 --pmf_len 256 --concurrency 32 --channels 8"
  [gamma_f64_1m_shape0.3]="--rpc gamma --precision f64 --gamma_samples 1000000 --gamma_shape 0.3 --concurrency 32 --channels 8"
  [gamma_f32_4m]="--rpc gamma --precision f32 --gamma_samples 4000000 --concurrency 32 --channels 8"
  [categorical_f32_4096x256x64]="--rpc categorical --precision f32 --categorical_rows 4096 --categories 256 --draws 64 --concurrency 32 --channels 8"
  [small_gamma_256]="--rpc gamma --precision f32 --gamma_samples 256 --concurrency 64 --channels 64"
)
load() {  # NAME LOAD
  local dir="$out/$1/loads"
  mkdir -p "$dir"
  scrape "$dir/$2.metrics_before.txt"
  # shellcheck disable=SC2086
  timeout $((duration + 60)) "$loadgen" --target "127.0.0.1:$port" --json \
    --progress=false --deadline 30s --duration "${duration}s" ${loads[$2]} \
    > "$dir/$2.json" 2> "$dir/$2.err"
  echo $? > "$dir/$2.rc"
  scrape "$dir/$2.metrics_after.txt"
}

for config in $configs; do
  if ! start "$config" --gpus "$(gpu_list "$config")" \
    --max_enumerate_pairs 100000000000; then
    echo "multi_gpu.sh: the $config-GPU server did not start:" >&2
    cat "$out/$config.server.log" >&2
    continue
  fi
  echo "multi_gpu.sh: $config-GPU server on port $port"
  identical "$config"
  for l in ${LOADS:-${!loads[@]}}; do load "$config" "$l"; done
  stop
done

# A GPU that cannot be initialised: listed, logged, the others serve.
mkdir -p "$out/unavailable"
[ "$gpus" -ge 2 ] && fail_list=0,1 || fail_list=0
if [ "$gpus" -ge 2 ]; then
  if SAMPLER_TEST_ONLY_FAIL_GPUS=1 start unavailable/serving --gpus 0,1; then
    "$ctl" --target "127.0.0.1:$port" --json info \
      > "$out/unavailable/info.json" 2>&1
    "$ctl" --target "127.0.0.1:$port" --json --seed 1 --precision f32 gamma \
      --count 1000 > "$out/unavailable/gamma.json" 2>&1
    echo $? > "$out/unavailable/gamma.rc"
    stop
  fi
fi
# Every GPU failing: the server must refuse to start (exit 1).
SAMPLER_TEST_ONLY_FAIL_GPUS=$fail_list start unavailable/none --gpus "$fail_list"
echo $? > "$out/unavailable/none.rc"
[ "$(cat "$out/unavailable/none.rc")" = 0 ] && stop

# A pool cap: the oversized batch fails alone.
mkdir -p "$out/poolcap"
if start poolcap/server --gpus "$(gpu_list "${configs##* }")" \
  --gpu_pool_limit_bytes 67108864 --gpu_pool_release_threshold_bytes 0 \
  --max_message_bytes 268435456; then
  timeout 60 "$loadgen" --target "127.0.0.1:$port" --json --progress=false \
    --rpc boards --duration 6s --concurrency 8 --channels 4 \
    > "$out/poolcap/boards.json" 2> "$out/poolcap/boards.err" &
  boards_pid=$!
  sleep 1
  for i in 1 2; do
    timeout 60 "$ctl" --target "127.0.0.1:$port" --precision f64 gamma \
      --shape 2 --count 16000000 > "$out/poolcap/big.$i.log" 2>&1
    echo $? > "$out/poolcap/big.$i.rc"
  done
  wait "$boards_pid"
  "$ctl" --target "127.0.0.1:$port" --precision f32 gamma --count 100000 \
    > "$out/poolcap/small.log" 2>&1
  echo $? > "$out/poolcap/small.rc"
  scrape "$out/poolcap/metrics.txt"
  stop
fi

python3 "$here/multi_gpu_report.py" "$out" "$out/report" \
  && echo "multi_gpu.sh: report in $out/report.md"
