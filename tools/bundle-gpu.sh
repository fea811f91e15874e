#!/usr/bin/env bash
# Gathers what bench/gpu_session.sh runs into a self-contained folder (the
# binaries and their shared libraries) to carry to a GPU host:
#   tools/bundle-gpu.sh bundle-gpu   (after tools/build.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/bundle-gpu}
b=$root/build
bundle_runtime=${BUNDLE_RUNTIME:-$root/../shared/tools/bundle-runtime}
"$bundle_runtime" "$dest" $b/server/sampler-server $b/client/sampler-loadgen \
  $b/client/samplerctl $b/tests/integration_test $b/tests/boards_gpu_test \
  $b/tests/categorical_gpu_test $b/tests/enumerate_gpu_test \
  $b/tests/gamma_gpu_test $b/tests/multi_device_gpu_test \
  $b/tests/cuda_backend_gpu_test \
  $b/bench/service/floor-server $b/bench/service/frames \
  $b/bench/service/wire_bench $b/bench/service/upload_bench \
  $b/bench/enumerate_plan_bench $b/bench/enumerate_bench $b/bench/enumerate_host_bench \
  $b/bench/categorical_bench $b/bench/gamma_bench $(command -v h2load)
# Debug information is most of the size; the carried folder is capped.
strip --strip-debug "$dest"/sampler-server "$dest"/sampler-loadgen \
  "$dest"/samplerctl "$dest"/integration_test "$dest"/*_gpu_test \
  "$dest"/floor-server "$dest"/frames "$dest"/wire_bench \
  "$dest"/upload_bench "$dest"/enumerate_plan_bench "$dest"/enumerate_bench \
  "$dest"/enumerate_host_bench "$dest"/categorical_bench "$dest"/gamma_bench
cp "$root/bench/gpu_session.sh" "$root/bench/service/run.sh" \
  "$root/bench/service/report.py" "$root/bench/service/floor.sh" \
  "$root/bench/service/multi_gpu.sh" "$root/bench/service/multi_gpu_report.py" \
  "$root/bench/service/poisson_binomial.sh" \
  "$root/bench/service/poisson_binomial_ref.py" \
  "$root/bench/service/small_rounds.sh" "$root/bench/service/crossover.sh" \
  "$root/bench/service/crossover_report.py" \
  "$root/bench/service/issue13.sh" "$root/bench/service/issue13_report.py" \
  "$root/bench/service/server_probe.py" "$root/bench/service/thread_report.py" \
  "$dest/"
