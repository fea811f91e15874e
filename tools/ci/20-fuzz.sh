#!/usr/bin/env bash
# Fuzzing stage (issue #6 item 1): builds the libFuzzer targets of tests/fuzz
# with clang, ASan and UBSan in build-fuzz/ (ccache makes rebuilds cheap),
# then runs each target for FUZZ_SECONDS (default 60) on a copy of its seed
# corpus plus tests/fuzz/regressions/<target>/ (the committed corpus does
# not grow), FUZZ_JOBS targets at a time (default: the number of cores; each
# target keeps about one core busy). Prints the executions per target from
# libFuzzer's final "Done N runs in S second(s)" line and ends with
# "fuzz: N passed, N failed"; exits non-zero if any target crashed, timed out,
# ran out of memory or broke an invariant. A failing target's log tail is
# printed and its crashing inputs are kept in build-fuzz/artifacts/<target>/:
# fix the bug, then add the input to tests/fuzz/regressions/<target>/ (the
# normal build's fuzz_regression_test replays it from then on).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-$(nproc)}
build="$root/build-fuzz"
fuzz_dir="$root/tests/fuzz"

# One target per corpus directory (tests/fuzz/CMakeLists.txt builds them).
targets=()
for dir in "$fuzz_dir"/corpus/*/; do targets+=("$(basename "$dir")"); done

# Debian 12's clang-14 (tools/deps.sh installs it with libclang-rt-14-dev,
# which holds libFuzzer and the sanitizer runtimes).
cc=$(command -v clang-14 || command -v clang || true)
cxx=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$cc" ] || [ -z "$cxx" ]; then
  echo "fuzz: no clang found (tools/deps.sh installs clang-14)"
  echo "fuzz: 0 passed, ${#targets[@]} failed"
  exit 1
fi

start=$(date +%s)
echo "fuzz: building in $build ($(basename "$cxx"), libFuzzer + ASan + UBSan)"
CC="$cc" CXX="$cxx" cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSAMPLER_FUZZ=ON >/dev/null
cmake --build "$build" -j"$(nproc)" >"$build/fuzz-build.log" 2>&1 || {
  tail -n 50 "$build/fuzz-build.log"
  echo "fuzz: build failed"
  echo "fuzz: 0 passed, ${#targets[@]} failed"
  exit 1
}
echo "fuzz: built in $(( $(date +%s) - start ))s"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$build/artifacts"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# One target: fuzz a scratch copy of its corpus; the exit status and the log
# are left in $work/<target>/.
fuzz_one() {
  local t=$1 dir="$work/$1"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp "$fuzz_dir/corpus/$t"/* "$dir/corpus/"
  if [ -d "$fuzz_dir/regressions/$t" ]; then
    cp "$fuzz_dir/regressions/$t"/* "$dir/corpus/" 2>/dev/null || true
  fi
  local rc=0
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -timeout=10 -dict="$fuzz_dir/sampler.dict" -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/" \
    "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  echo "$rc" >"$dir/rc"
}

fuzz_start=$(date +%s)
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait || true

passed=0
failed=0
for t in "${targets[@]}"; do
  dir="$work/$t"
  rc=$(cat "$dir/rc" 2>/dev/null || echo 1)
  done_line=$(grep -E '^Done [0-9]+ runs in [0-9]+ second' "$dir/log" | tail -n 1 || true)
  runs=$(sed -E 's/^Done ([0-9]+) runs in ([0-9]+) second.*/\1/' <<<"$done_line")
  secs=$(sed -E 's/^Done ([0-9]+) runs in ([0-9]+) second.*/\2/' <<<"$done_line")
  cov=$(grep -E '^#[0-9]+' "$dir/log" | tail -n 1 | grep -oE 'cov: [0-9]+' || true)
  if [ "$rc" = 0 ] && [ -n "$done_line" ]; then
    passed=$((passed + 1))
    printf 'fuzz_%-12s passed: %s executions in %s s (%s/s), %s, corpus %s -> %s files\n' \
      "$t" "$runs" "$secs" "$(( runs / (secs > 0 ? secs : 1) ))" "${cov:-cov: ?}" \
      "$(ls "$fuzz_dir/corpus/$t" | wc -l)" "$(ls "$dir/corpus" | wc -l)"
  else
    failed=$((failed + 1))
    echo "fuzz_$t FAILED (exit $rc):"
    grep -E 'FUZZ INVARIANT BROKEN|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|^SUMMARY:' \
      "$dir/log" | head -n 10 | sed 's/^/  ! /' || true
    echo "  log tail:"
    tail -n 40 "$dir/log" | sed 's/^/  | /'
    mkdir -p "$build/artifacts/$t"
    cp "$dir"/artifacts/* "$build/artifacts/$t/" 2>/dev/null || true
    for a in "$build/artifacts/$t"/*; do
      [ -e "$a" ] || continue
      echo "  input kept: $a ($(stat -c %s "$a") bytes); first bytes:"
      head -c 256 "$a" | od -A d -c | head -n 8 | sed 's/^/    /'
    done
  fi
done
echo "fuzz: fuzzing took $(( $(date +%s) - fuzz_start ))s, the stage $(( $(date +%s) - start ))s"
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
