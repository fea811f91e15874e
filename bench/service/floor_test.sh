#!/usr/bin/env bash
# The floor server answers every small benchmark case with as many bytes as
# sampler-server does (frames compare), and `frames write` writes one frame
# per case: otherwise the benchmark's floor ratios would compare different
# work. CTest floor_server_test; CPU backend on loopback.
#   floor_test.sh RUN_WITH_SERVER SAMPLER_SERVER FLOOR_SERVER FRAMES
set -u
run_with_server=$1 sampler_server=$2 floor_server=$3 frames=$4
dir=$(mktemp -d "${TMPDIR:-/tmp}/floor-test.XXXXXX")
floor_pid=""
cleanup() {
  if [ -n "$floor_pid" ]; then
    kill -TERM "$floor_pid" 2>/dev/null && wait "$floor_pid" 2>/dev/null
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

"$frames" write "$dir" || exit 1
cases=$(wc -l < "$dir/cases.tsv")
[ "$cases" -ge 8 ] || { echo "FAIL: $cases cases in cases.tsv"; exit 1; }
while IFS=$'\t' read -r name method bytes size; do
  actual=$(stat -c %s "$dir/$name.bin")
  [ "$actual" -eq $((bytes + 5)) ] ||
    { echo "FAIL: $name.bin has $actual bytes, want $bytes + 5"; exit 1; }
done < "$dir/cases.tsv"

( exec "$floor_server" --listen 127.0.0.1:0 2>"$dir/floor.log" ) &
floor_pid=$!
port=""
for _ in $(seq 300); do
  port=$(sed -n 's/.*serving on port \([0-9][0-9]*\).*/\1/p' "$dir/floor.log")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "FAIL: floor-server did not start"; cat "$dir/floor.log"; exit 1; }
"$run_with_server" "$sampler_server" "$frames" compare --a @TARGET@ \
  --b "127.0.0.1:$port" --small_only
