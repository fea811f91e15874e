#!/usr/bin/env bash
# CI stage: the unit and integration suites under AddressSanitizer with
# UndefinedBehaviorSanitizer, and the concurrent pieces (batcher, CPU
# backend, the CUDA backend's device dispatch, metrics, the count of each
# connection's calls) under
# ThreadSanitizer. Separate build trees, host code
# only (no CUDA). Ends with "sanitizers: N passed, N failed".
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
jobs=$(nproc)
passed=0; failed=0

# Unit and integration binaries, by CTest name.
asan_tests='^(detmath|philox|boards|categorical|gamma|dirichlet|enumerate|golden|request_parse|stream_chunk|cpu_backend|metrics|batcher|client_(common|ctl|loadgen)|stream_reactor|connection_calls|lone_call|gpu_inline|integration)_test$'
tsan_tests='^(batcher|cpu_backend|device_dispatch|metrics|connection_calls)_test$'

run_suite() {  # name sanitize test-regex targets...
  local name=$1 sanitize=$2 regex=$3; shift 3
  local dir=$root/build-$name
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSAMPLER_CUDA=OFF -DSAMPLER_SANITIZE="$sanitize" >/dev/null || return 1
  cmake --build "$dir" -j"$jobs" --target "$@" || return 1
  # ctest, then the check that every GoogleTest binary ran a test.
  "$root/tools/ctest_checked.sh" "$dir" --output-on-failure -j"$jobs" \
    --timeout 900 -R "$regex"
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_init_order=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

if run_suite asan address "$asan_tests" detmath_test philox_test boards_test \
    categorical_test gamma_test dirichlet_test enumerate_test golden_test \
    request_parse_test stream_chunk_test cpu_backend_test metrics_test \
    batcher_test client_common_test client_ctl_test client_loadgen_test \
    stream_reactor_test connection_calls_test lone_call_test gpu_inline_test \
    integration_test sampler-server; then
  passed=$((passed + 1)); echo "asan+ubsan: passed"
else
  failed=$((failed + 1)); echo "asan+ubsan: FAILED"
fi
if run_suite tsan thread "$tsan_tests" batcher_test cpu_backend_test \
    device_dispatch_test metrics_test connection_calls_test; then
  passed=$((passed + 1)); echo "tsan: passed"
else
  failed=$((failed + 1)); echo "tsan: FAILED"
fi
echo "sanitizers: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
