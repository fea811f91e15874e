#!/usr/bin/env bash
# Small requests (floor.sh's two small cases: 256 float32 gamma samples,
# 64 connections x 1 stream and 16 x 16) on a small or shared machine:
# several servers measured in interleaved rounds, so that a load change on
# the host hits every server alike, and each server's ratio to the floor
# taken within its round (issue 13 items 2 and 5; floor.sh stays the
# reference on the GPU host). Servers on SERVER_CPUS, h2load on CLIENT_CPUS.
#
#   bench/service/small_rounds.sh BIN_DIR OUT_DIR NAME=BINARY[:FLAGS] ...
#
# BIN_DIR: a build directory or a bundle (for the frames tool).
# FLAGS: sampler-server flags separated by commas, e.g.
#   floor=build/bench/service/floor-server
#   cpu=build/server/sampler-server:--backend=cpu,--metrics_listen=
# Writes OUT_DIR/<round>/<name>/<case>.{txt,log}, OUT_DIR/rounds.tsv (one
# line per round, server and case: req/s, p50 and p99 ms, and where the
# server's time goes, from server_probe.py: CPU microseconds and context
# switches per call from /proc, and for sampler-server, from its /metrics,
# the mean time a call spent in the server, in its batcher queue, a batch's
# device time and requests per batch) and prints the medians over the rounds
# with the ratio to the server named "floor"; and OUT_DIR/<round>/<name>/
# <case>.threads.tsv, the same window's CPU time and context switches per
# call by thread group (server_probe.py threads; thread_report.py OUT_DIR
# tabulates them).
#   ROUNDS (5)  DURATION seconds per case (4)  SERVER_CPUS (0)
#   CLIENT_CPUS (1)  H2LOAD_THREADS (1)
#   CASE: the request, a case of frames.cc (gamma_256_f32; e.g.
#     categorical_4096x1024_f32 for the 16 MB upload)
#   PATTERNS: h2load's connection patterns, "label args" separated by
#     semicolons ("64x1 -c 64 -m 1;16x16 -c 16 -m 16")
set -euo pipefail
build=$1
out=$2
shift 2
servers=("$@")
rounds=${ROUNDS:-5}
duration=${DURATION:-4}
server_cpus=${SERVER_CPUS:-0}
client_cpus=${CLIENT_CPUS:-1}
probe=$(dirname "$0")/server_probe.py
frames=$build/bench/service/frames
[ -x "$frames" ] || frames=$build/frames
h2load=$build/h2load  # a bundle carries it; a build does not
[ -x "$h2load" ] || h2load=$(command -v h2load) || {
  echo "small_rounds.sh: no h2load in $build or on PATH" >&2
  exit 1
}
mkdir -p "$out/frames"
"$frames" write "$out/frames" > /dev/null
case_name=${CASE:-gamma_256_f32}
method=$(awk -F'\t' -v c="$case_name" '$1 == c {print $2}' "$out/frames/cases.tsv")
[ -n "$method" ] || { echo "small_rounds.sh: no case $case_name" >&2; exit 1; }
IFS=';' read -r -a patterns <<< "${PATTERNS:-64x1 -c 64 -m 1;16x16 -c 16 -m 16}"
printf 'round\tserver\tcase\treq_s\tp50_ms\tp99_ms\tcpu_us\tctx_switches\tserver_ms\tqueue_ms\tdevice_ms_batch\treq_batch\n' \
  > "$out/rounds.tsv"
for round in $(seq "$rounds"); do
  for spec in "${servers[@]}"; do
    name=${spec%%=*}
    rest=${spec#*=}
    binary=${rest%%:*}
    flags=()
    [ "$rest" != "$binary" ] && IFS=, read -r -a flags <<< "${rest#*:}"
    # sampler-server's /metrics on a port of its own (the last flag wins).
    metrics_url=""
    if [ "$(basename "$binary")" = sampler-server ]; then
      mport=$((20000 + RANDOM % 20000))
      flags+=("--metrics_listen=127.0.0.1:$mport")
      metrics_url="http://127.0.0.1:$mport/metrics"
    fi
    dir="$out/$round/$name"
    mkdir -p "$dir"
    taskset -c "$server_cpus" "$binary" --listen 127.0.0.1:0 "${flags[@]}" 2> "$dir/server.log" &
    pid=$!
    port=$(python3 - "$dir/server.log" <<'PY'
import re, sys, time
for _ in range(100):  # 10 s
    m = re.search(r"serving on port (\d+)", open(sys.argv[1]).read())
    if m:
        print(m.group(1))
        break
    time.sleep(0.1)
PY
)
    [ -n "$port" ] || { echo "small_rounds.sh: $name did not start" >&2; exit 1; }
    for case in "${patterns[@]}"; do
      read -r label args <<< "$case"
      taskset -c "$client_cpus" "$h2load" "http://127.0.0.1:$port$method" \
        -d "$out/frames/$case_name.bin" -H 'content-type: application/grpc' \
        -H 'te: trailers' --log-file="$dir/$label.log" $args -t "${H2LOAD_THREADS:-1}" \
        -D "$duration" --warm-up-time=1 > "$dir/$label.txt" 2>&1 &
      load=$!
      sleep 1.5
      python3 "$probe" snap "$pid" $metrics_url > "$dir/$label.before.json"
      sleep "$((duration - 1))"
      python3 "$probe" snap "$pid" $metrics_url > "$dir/$label.after.json"
      wait "$load" || true
      python3 - "$dir" "$label" "$round" "$name" "$((duration - 1))" "$probe" >> "$out/rounds.tsv" <<'PY'
import re, subprocess, sys
d, label, rnd, name, secs, probe = sys.argv[1:7]
lat = sorted(int(l.split()[2]) for l in open(f"{d}/{label}.log") if len(l.split()) >= 3)
m = re.search(r"([\d.]+) req/s", open(f"{d}/{label}.txt").read())
rate = float(m.group(1)) if m else 0.0
q = lambda p: lat[min(len(lat) - 1, int(p * (len(lat) - 1) + 0.5))] / 1000 if lat else 0
calls = rate * float(secs)
where = subprocess.run(
    [sys.executable, probe, "diff", f"{d}/{label}.before.json",
     f"{d}/{label}.after.json", str(calls)],
    capture_output=True, text=True).stdout.strip()
with open(f"{d}/{label}.threads.tsv", "w") as threads:
    subprocess.run(
        [sys.executable, probe, "threads", f"{d}/{label}.before.json",
         f"{d}/{label}.after.json", str(calls)], stdout=threads)
print(f"{rnd}\t{name}\t{label}\t{rate:.0f}\t{q(.5):.2f}\t{q(.99):.2f}\t{where}")
PY
    done
    kill -TERM "$pid"
    wait "$pid" 2> /dev/null || true
  done
done
python3 - "$out/rounds.tsv" <<'PY'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
floor = {(r[0], r[2]): float(r[3]) for r in rows if r[1] == "floor"}
print("server\tcase\treq/s\tratio\tp50 ms\tp99 ms\tcpu us/call\tctx/call\tserver ms\tqueue ms\tdevice ms/batch\treq/batch  (medians over rounds)")
for name in dict.fromkeys(r[1] for r in rows):
    for case in dict.fromkeys(r[2] for r in rows):
        sel = [r for r in rows if r[1] == name and r[2] == case]
        med = lambda i: statistics.median(float(r[i]) for r in sel)
        ratio = statistics.median(float(r[3]) / floor[(r[0], case)] for r in sel
                                  if floor.get((r[0], case)))
        print(f"{name}\t{case}\t{med(3):.0f}\t{ratio:.2f}\t{med(4):.2f}\t{med(5):.2f}\t{med(6):.1f}\t{med(7):.2f}\t{med(8):.3f}\t{med(9):.3f}\t{med(10):.3f}\t{med(11):.2f}")
PY
