#!/usr/bin/env bash
# Issue 15's enumeration benchmark, in one run on one host: the CPU backend
# and, where a GPU is usable, the CUDA backend of sampler-server, each timed
# by sampler-loadgen over loopback (one request at a time) and by the
# server's own sampler_request_duration_seconds (read from /metrics before
# and after each case: the server's time from the decoded request to its
# answer), on
#   - Poisson binomials of n = 4,000, 30,000 and 100,000 Bernoulli terms
#     (float64, log-space output, packed form): pb_<n>;
#   - 16,384 problems of 8 terms of 4 points (float32), explicit and packed:
#     small_explicit, small_packed;
# and the accuracy of each backend's Poisson-binomial tails, with the DC-FFT
# reference's, against the exact PMF (poisson_binomial_ref.py).
#
#   bench/service/poisson_binomial.sh BIN_DIR OUT_DIR
#
# BIN_DIR: a build directory (binaries under server/ and client/) or a
# bundle (binaries side by side). Writes OUT_DIR/<backend>/<case>.loadgen.json
# and .server.json, OUT_DIR/accuracy_<n>.json, OUT_DIR/host.txt, and the
# report OUT_DIR/report.{json,md}. Needs python3 (numpy for the DC-FFT only).
#   PB_SIZES      Poisson-binomial sizes ("4000 30000 100000")
#   CPU_MAX_N     largest n run on the CPU backend (30000: n = 100,000 takes
#                 minutes there today)
#   PB_REQUESTS   timed requests per Poisson-binomial case (3; at most 2 for
#                 n > 30000, and 1 on the CPU backend for n > 4000)
#   SMALL_REQUESTS  timed requests per small-problems case (10)
#   WARMUP_REQUESTS untimed requests before each case's timed ones (8; 1
#                 for n > 30000 and for the CPU backend's n > 4000): one
#                 for each of the CUDA backend's workers (4 streams a GPU,
#                 each its own pinned staging buffers, grown for the largest
#                 batch it has run, and its own kept planner), so that no
#                 timed request pays a first batch's allocations
#   PYTHON        the Python 3 to use (python3)
set -euo pipefail
if [ $# -ne 2 ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2
  exit 2
fi
bin=$1
out=$2
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
ref="$here/poisson_binomial_ref.py"
pb_sizes=${PB_SIZES:-4000 30000 100000}
cpu_max_n=${CPU_MAX_N:-30000}
pb_requests=${PB_REQUESTS:-3}
small_requests=${SMALL_REQUESTS:-10}
warmup_requests=${WARMUP_REQUESTS:-8}
python=${PYTHON:-python3}
command -v "$python" >/dev/null || {
  echo "poisson_binomial.sh: no $python (set PYTHON)" >&2
  exit 1
}

binary() {  # name: its path under BIN_DIR
  for p in "$bin/$1" "$bin/server/$1" "$bin/client/$1"; do
    if [ -x "$p" ]; then echo "$p"; return; fi
  done
  echo "poisson_binomial.sh: no $1 under $bin" >&2
  exit 1
}
server_bin=$(binary sampler-server)
loadgen_bin=$(binary sampler-loadgen)
ctl_bin=$(binary samplerctl)

{
  echo "date: $(date -u +%FT%TZ), $(nproc) CPUs"
  grep -m1 'model name' /proc/cpuinfo || true
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
  "$python" -c 'import numpy; print("numpy", numpy.__version__)' 2>/dev/null ||
    echo "numpy: not installed (no DC-FFT)"
} > "$out/host.txt"

for n in $pb_sizes; do
  "$python" "$ref" request "$n" "$out/pb_$n.request.json"
done

server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap stop_server EXIT

# One case: loadgen's report, and the server's mean time over the same calls.
timed() {  # backend case requests loadgen-flags...
  local backend=$1 case=$2 requests=$3
  shift 3
  "$python" "$ref" metrics "$metrics" > "$out/$backend/$case.before.json"
  "$loadgen_bin" --target "127.0.0.1:$port" --json --progress=false \
    --rpc enumerate --concurrency 1 --requests "$requests" --deadline 600s \
    "$@" > "$out/$backend/$case.loadgen.json" 2>> "$out/$backend/loadgen.log" ||
    true
  "$python" "$ref" metrics "$metrics" "$out/$backend/$case.before.json" \
    > "$out/$backend/$case.server.json"
}

declare -A responses
for backend in cpu cuda; do
  if [ "$backend" = cuda ] && ! nvidia-smi -L >/dev/null 2>&1; then
    echo "poisson_binomial.sh: no GPU, no CUDA run" >&2
    continue
  fi
  mkdir -p "$out/$backend"
  log="$out/$backend/server.log"
  metrics=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  # n = 100,000 needs about 5e9 multiply-adds, over the default limit.
  "$server_bin" --backend "$backend" --listen 127.0.0.1:0 \
    --metrics_listen "127.0.0.1:$metrics" \
    --max_enumerate_pairs 100000000000 2> "$log" &
  server_pid=$!
  port=""
  for _ in $(seq 300); do
    port=$(sed -n 's/.*serving on port \([0-9][0-9]*\).*/\1/p' "$log" | head -n1)
    if [ -n "$port" ] || ! kill -0 "$server_pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  if [ -z "$port" ]; then
    echo "poisson_binomial.sh: $backend server did not start: $(cat "$log")" >&2
    exit 1
  fi
  for n in $pb_sizes; do
    if [ "$backend" = cpu ] && [ "$n" -gt "$cpu_max_n" ]; then continue; fi
    # The answer, for its accuracy (this call also warms the server up).
    "$ctl_bin" --target "127.0.0.1:$port" --timeout 600s --json \
      --request_json "$out/pb_$n.request.json" enumerate \
      > "$out/$backend/pb_$n.response.json" 2>> "$out/$backend/ctl.log" &&
      responses[$n]="${responses[$n]:-} $backend=$out/$backend/pb_$n.response.json"
    requests=$pb_requests
    if [ "$n" -gt 30000 ] && [ "$requests" -gt 2 ]; then requests=2; fi
    if [ "$backend" = cpu ] && [ "$n" -gt 4000 ]; then requests=1; fi
    warmup=$warmup_requests
    if [ "$n" -gt 30000 ] || { [ "$backend" = cpu ] && [ "$n" -gt 4000 ]; }; then
      warmup=1
    fi
    for count in "$warmup" "$requests"; do  # the warm-up's files overwritten
      timed "$backend" "pb_$n" "$count" --poisson_binomial "$n" \
        --precision f64 --output_space log --enumerate_packed
    done
  done
  for form in explicit packed; do
    flags=(--problems 16384 --terms 8 --pmf_len 4 --precision f32)
    if [ "$form" = packed ]; then flags+=(--enumerate_packed); fi
    timed "$backend" "small_$form" "$warmup_requests" "${flags[@]}"  # warm-up
    timed "$backend" "small_$form" "$small_requests" "${flags[@]}"
  done
  stop_server
done

for n in $pb_sizes; do
  # shellcheck disable=SC2086 # one BACKEND=FILE word each
  "$python" "$ref" accuracy "$n" ${responses[$n]:-} > "$out/accuracy_$n.json"
done
"$python" "$ref" report "$out"
echo "poisson_binomial.sh: results in $out"
