#!/usr/bin/env bash
# One call on a GPU host, from a bundle made by tools/bundle-gpu.sh: every GPU
# test, compute-sanitizer memcheck and racecheck on a subset of each, the
# integration suite against the CUDA backend, a pool-cap check, the
# service benchmark, and every GPU of the host against one (issue 14). Logs
# go to $OUT/results.tgz; a summary to stdout.
# PARTS (default: all of them) picks some: tests sanitizers integration pool
# service floor multi wire pb small smallprof plan crossover upload unary
# categorical catblock catstream catsmall enumerate tensor gamma issue13.
set -uo pipefail
parts=${PARTS:-tests sanitizers integration pool service floor multi wire pb small smallprof plan crossover upload unary categorical catblock catstream catsmall enumerate tensor gamma issue13}
want() { [[ " $parts " == *" $1 "* ]]; }
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
out=${OUT:-/tmp/gpu-session}
work=$(mktemp -d)
summary() { echo "$*" | tee -a "$work/summary.txt"; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
  | tee "$work/gpu.txt"
date -u +%Y-%m-%dT%H:%M:%SZ > "$work/date.txt"

want tests && for t in boards categorical enumerate gamma multi_device cuda_backend; do
  ./${t}_gpu_test > "$work/${t}_gpu_test.log" 2>&1
  summary "$t GPU tests: rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' \
    "$work/${t}_gpu_test.log" | tr '\n' ' ')"
done

# Sanitizers on a representative subset of each binary (full runs take too
# long under instrumentation).
declare -A subset=(
  [boards]='BoardsGpuTest.Go19x19TwoColoursMatchesCpu:BoardsGpuTest.MixedBatchMatchesCpu'
  [categorical]='CategoricalGpuTest/0.ButterflyMixedBatch:CategoricalGpuTest/1.ButterflyLargeKUsesTheWorkspace:CategoricalGpuTest/0.RowSplitMixedBatch:CategoricalGpuTest/0.LanesManyRowsAndChunks:CategoricalGpuTest/1.WarpTilesMixedBatch:CategoricalGpuTest/0.BlockRowMixedBatch:CategoricalGpuTest/0.BlockRowStreamedFewRows'
  [enumerate]='EnumerateGpuTest/*.SanitizerSmoke:EnumerateGpuTest/*.SmallPath*:EnumerateGpuTest/*.PairKernel*'
  [gamma]='GammaGpuTest/0.MixedBatchesMatchCpuBitForBit:GammaGpuTest/1.DirichletRaggedBatchesMatchCpuBitForBit'
)
want sanitizers && for t in boards categorical enumerate gamma; do
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 ./${t}_gpu_test \
      --gtest_filter="${subset[$t]}" > "$work/${t}_${tool}.log" 2>&1
    summary "$t $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' \
      "$work/${t}_${tool}.log" | tail -1)"
  done
done

if want integration; then
  SAMPLER_TEST_BACKEND=cuda SAMPLER_SERVER_BIN=$PWD/sampler-server \
    ./integration_test > "$work/integration_cuda.log" 2>&1
  summary "integration on CUDA: rc=$? $(grep -E '^\[  (PASSED|FAILED) ' \
    "$work/integration_cuda.log" | tr '\n' ' ')"
fi

# A pool capped at 64 MiB: a request needing more (16M float64 samples:
# 128 MB of output) fails with RESOURCE_EXHAUSTED, and the next request that
# fits succeeds.
if want pool; then
./sampler-server --backend cuda --listen 127.0.0.1:50071 --metrics_listen "" \
  --gpu_pool_limit_bytes 67108864 --gpu_pool_release_threshold_bytes 0 \
  --max_message_bytes 268435456 \
  2> "$work/pool_server.log" &
pool_pid=$!
sleep 2
./samplerctl --target 127.0.0.1:50071 --precision f64 gamma --shape 2 \
  --count 16000000 > "$work/pool_big.log" 2>&1
big=$?
./samplerctl --target 127.0.0.1:50071 --precision f32 gamma --shape 2 \
  --count 100000 > "$work/pool_small.log" 2>&1
small=$?
kill -TERM $pool_pid; wait $pool_pid
summary "pool cap: big rc=$big ($(head -c 200 "$work/pool_big.log" | tr '\n' ' ')) then small rc=$small"
fi

if want service; then
  DURATION=10s ./run.sh . "$work/service" --backend cuda > "$work/service.log" 2>&1
  summary "service bench: rc=$?"
  ./run.sh . "$work/service_cpu" --backend cpu > "$work/service_cpu.log" 2>&1
  summary "service bench (cpu on this host): rc=$?"
fi

# The service against the floor of its RPC stack (issue 13): h2load and
# sampler-loadgen against floor-server and both backends.
if want floor; then
  ./floor.sh . "$work/floor" > "$work/floor.log" 2>&1
  summary "floor bench: rc=$? $(tail -1 "$work/floor.log")"
fi

# Several GPUs (issue 14): every kind on every GPU against the CPU and the
# GPUs against each other, then the one-GPU and two-GPU servers (identical
# answers, scaling, small requests, an unavailable GPU, a pool cap). On a
# one-GPU host it reports "one GPU: scaling not measured". About 3 minutes;
# the report is multi_gpu/report.md in results.tgz.
if want multi; then
  ./multi_device_gpu_test > "$work/multi_device_gpu_test.log" 2>&1
  summary "multi-device GPU test: rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' \
    "$work/multi_device_gpu_test.log" | tr '\n' ' ')"
  timeout 300 ./multi_gpu.sh . "$work/multi_gpu" > "$work/multi_gpu.log" 2>&1
  summary "multi-GPU bench: rc=$? $(tail -1 "$work/multi_gpu.log")"
fi

# The server's cost of one 10M-sample answer before the transport, typed
# (protobuf serializes) against raw (values borrowed, server/wire_answer.h),
# and of binding and writing its memory: zero-filled, as bound
# (server/response_bind.h: huge pages advised) and reused (no page faults).
if want wire; then
  ./wire_bench > "$work/wire_bench.log" 2>&1
  summary "wire bench: rc=$? $(tr '\n' ' ' < "$work/wire_bench.log")"
fi

# Enumeration at issue 15's sizes (Poisson binomials of 4,000 to 100,000
# terms, 16,384 small problems explicit and packed) on both backends, with
# the DC-FFT reference and exact tails (poisson_binomial.sh); about 1-2
# minutes.
if want pb; then
  ./poisson_binomial.sh . "$work/pb" > "$work/pb.log" 2>&1
  summary "poisson binomial bench: rc=$? $(tail -1 "$work/pb.log")"
  # The device part alone, with the extended kernel's fallback count.
  ./enumerate_bench --pb=4000,30000,100000 > "$work/pb_device.log" 2>&1
  summary "poisson binomial device time: rc=$? $(grep -o 'pb n=.*fallbacks per run [0-9]*' "$work/pb_device.log" | tr '\n' ';')"
fi

# The CUDA enumeration's host planning on this host's CPU (issue 15): Add,
# Finish and PackInto of 16,384 problems of 8 terms of 4 points (float32)
# and of a Poisson binomial of 4,000 terms (float64, log out), ms per stage,
# for a fresh builder and for one reused across batches (the server's). The
# planner's fingerprints (what it hands the device), fresh and reused, with
# this host's planning threads: they must equal each other and the
# development machine's (the 16,384-problem lines: float cd24617dfd7356ae,
# double 8aa38d2fd8eb32c5).
if want plan; then
  ./enumerate_plan_bench --runs=25 > "$work/plan.log" 2>&1
  summary "enumerate host planning: rc=$? $(grep -E 'Reserve\(\) first|one builder' -A2 "$work/plan.log" | grep small | tr '\n' ';')"
  ./enumerate_plan_bench --fingerprint > "$work/plan_fingerprint.log" 2>&1
  ./enumerate_plan_bench --fingerprint --reuse > "$work/plan_fingerprint_reuse.log" 2>&1
  summary "enumerate planner fingerprints: fresh and reused $(cmp -s "$work/plan_fingerprint.log" "$work/plan_fingerprint_reuse.log" && echo equal || echo DIFFER); $(grep 'small 16384' "$work/plan_fingerprint.log" | tr '\n' ';')"
  # Every host step of the small-problems request (parse, bind, planned
  # tree or small path, unpack, the CPU backend's work, wire) on this host.
  ./enumerate_host_bench --runs=15 > "$work/host_steps.log" 2>&1
  summary "enumerate small request host steps: rc=$? $(tr '\n' ';' < "$work/host_steps.log")"
fi

# Small requests (issue 13 items 2 and 5) in interleaved rounds: the floor
# and the CUDA backend as it starts by default (`cuda`: a small batch closed
# on a gRPC thread runs there only when the call that closed it is alone on
# a connection that does not multiplex, --gpu_inline=auto with
# --gpu_inline_below_items=16384; server/gpu_inline.h), with every batch
# handed to a stream's worker (`cuda_handoff`, --gpu_inline=never: the
# default before session 9) and with every small batch run on the gRPC
# thread that closed it (`cuda_inline`, --gpu_inline=always: faster at
# 64 x 1 and slower at 16 x 16 in session 8). The CPU backend is in the
# floor and smallprof parts. (Session 6 measured
# --run_small_batches_inline=false and --cpu_below_items=257 here, session
# 7 --gpu_wait=yield and block, session 8 --gpu_eager_batches=2 and 4 and
# --gpu_inline_below_items=512, session 9 auto with
# --max_connection_age=inf: no gain; bench/results/floor-h100-session{6,7,8}
# -2026-11-26.md, cuda-inline-h100-session8-2026-11-26.md.) Four rounds,
# about 3.5 minutes; the same windows' CPU and context switches per call by
# thread group go to small/threads.md.
small_cpus() {  # small_cpus [VAR=value ...] COMMAND ...: servers and load apart
  env SERVER_CPUS=0-$(($(nproc) - 5)) \
    CLIENT_CPUS=$(($(nproc) - 4))-$(($(nproc) - 1)) H2LOAD_THREADS=4 "$@"
}
if want small; then
  small_cpus ROUNDS=4 DURATION=4 ./small_rounds.sh . "$work/small" \
    floor=./floor-server cuda=./sampler-server:--backend=cuda,--metrics_listen= \
    cuda_handoff=./sampler-server:--backend=cuda,--metrics_listen=,--gpu_inline=never \
    cuda_inline=./sampler-server:--backend=cuda,--metrics_listen=,--gpu_inline=always \
    > "$work/small.log" 2>&1
  summary "small requests: rc=$? $(tail -9 "$work/small.log" | tr '\n' ';')"
  python3 thread_report.py "$work/small" > "$work/small/threads.md" 2>&1
  summary "small requests by thread group: rc=$? (small/threads.md in results.tgz)"
fi

# Where a small call's CPU goes on this host, without perf (issue 13 target
# 2: the CUDA path's 90-110 us a call against the floor's 62-65): one round
# of the floor, the CPU backend and the CUDA backend's default (auto),
# hand-off (never) and always-inline, with each thread's CPU time
# (schedstat), run-queue wait and context switches read from /proc before
# and after 3 s of h2load, grouped by thread name (gRPC's pollers and
# executors, the batchers, the CUDA slot workers, the CUDA driver's
# threads; server_probe.py, printed by thread_report.py to
# smallprof/threads.md and the summary). About a minute.
if want smallprof; then
  small_cpus ROUNDS=1 DURATION=4 ./small_rounds.sh . "$work/smallprof" \
    floor=./floor-server cpu=./sampler-server:--backend=cpu,--metrics_listen= \
    cuda=./sampler-server:--backend=cuda,--metrics_listen= \
    cuda_handoff=./sampler-server:--backend=cuda,--metrics_listen=,--gpu_inline=never \
    cuda_inline=./sampler-server:--backend=cuda,--metrics_listen=,--gpu_inline=always \
    > "$work/smallprof.log" 2>&1
  summary "small request profile: rc=$? $(tail -11 "$work/smallprof.log" | tr '\n' ';')"
  python3 thread_report.py "$work/smallprof" > "$work/smallprof/threads.md" 2>&1
  summary "small request profile by thread group: rc=$?"
  cat "$work/smallprof/threads.md" >> "$work/summary.txt"
  cat "$work/smallprof/threads.md"
fi

# The 16 MB upload (issue 13 item 3) in interleaved rounds, with where the
# server's time goes (server_probe.py): the floor and both backends, one and
# four calls at a time; and upload_bench, what the body's parse (weights
# grown or reserved, server/wire_request.h) and validation cost. About a
# minute.
if want upload; then
  ./upload_bench > "$work/upload_bench.log" 2>&1
  summary "upload bench: rc=$? $(tr '\n' ' ' < "$work/upload_bench.log")"
  SERVER_CPUS=0-$(($(nproc) - 5)) CLIENT_CPUS=$(($(nproc) - 4))-$(($(nproc) - 1)) \
    CASE=categorical_4096x1024_f32 PATTERNS="1x1 -c 1 -m 1;4x1 -c 4 -m 1" \
    ROUNDS=2 DURATION=4 ./small_rounds.sh . "$work/upload" \
    floor=./floor-server cpu=./sampler-server:--backend=cpu,--metrics_listen= \
    cuda=./sampler-server:--backend=cuda,--metrics_listen= \
    > "$work/upload.log" 2>&1
  summary "upload: rc=$? $(tail -7 "$work/upload.log" | tr '\n' ';')"
fi

# One unary answer of 10M float32 gamma samples (issue 13 target 4: 40 MB
# in 20 ms, 2 GB/s) in interleaved rounds, one call at a time: the floor,
# the CUDA backend with large answers in reused memory (the default,
# server/answer_memory.h) and with every answer on the heap as before
# (--answer_cache_bytes=0). ms a call = 1000 / req/s; MB/s = 40 x req/s.
# About a minute.
if want unary; then
  SERVER_CPUS=0-$(($(nproc) - 5)) CLIENT_CPUS=$(($(nproc) - 4))-$(($(nproc) - 1)) \
    CASE=gamma_10m_f32 PATTERNS="1x1 -c 1 -m 1" ROUNDS=3 DURATION=4 \
    ./small_rounds.sh . "$work/unary" floor=./floor-server \
    cuda=./sampler-server:--backend=cuda,--metrics_listen= \
    cuda_heap=./sampler-server:--backend=cuda,--metrics_listen=,--answer_cache_bytes=0 \
    > "$work/unary.log" 2>&1
  summary "unary 10M: rc=$? $(tail -4 "$work/unary.log" | tr '\n' ';')"
fi

# From which request size the CUDA backend beats the CPU backend end to end,
# per kind (issue 11 item 3): crossover.sh's sweeps at 1 s a size, about
# 90 s; the table is crossover/report.md in results.tgz.
if want crossover; then
  DURATION=${CROSSOVER_DURATION:-1s} ./crossover.sh . "$work/crossover" \
    > "$work/crossover.log" 2>&1
  summary "crossover: rc=$? $(grep -c 'rc=0' "$work/crossover.log") runs ok"
  python3 crossover_report.py "$work/crossover" \
    --md "$work/crossover/report.md" --json "$work/crossover/report.json" \
    >> "$work/crossover.log" 2>&1
  summary "crossover report: rc=$? $(grep -i 'crossover' "$work/crossover/report.md" 2>/dev/null | head -8 | tr '\n' ';')"
fi

# The categorical kernels at issue 11's sizes (categorical_bench --issue):
# K = 32 to 2^17 (8192 and 16384 among them) with 1, 4 and 32 draws per row
# over 512 MiB, and 64 rows of 4096, 16384 and 2^17, the small-K kernel
# against the row-split kernel, (K up to 128) the lanes kernel, (up to
# 256) the lane-group kernel and (64 to 2^17) the warp-tiles kernel, each as
# a fraction of the copy bandwidth measured in the same run (K = 128 and
# 256 added with the lane-group kernel, and warp tiles' evict-first variant
# "warp-tiles-ef" from K = 4096: 149 timings, well under the limit), and
# the block-row kernel (a row in shared memory, clusters past 16,384) from
# K = 257 to 2^17, with K = 257, 1000, 1024, 2048 and 20000 added for it,
# and (session 10) K = 512 with lane groups up to 512: about 240 timings.
# Block-row's variants run in the catblock part only ("block-row-2x",
# twice the warps a block, which lost at every K in session 9, by hand).
if want categorical; then
  timeout 240 ./categorical_bench --issue --quick \
    --csv "$work/categorical_issue.csv" > "$work/categorical_issue.log" 2>&1
  summary "categorical issue table: rc=$? $(grep -E 'copy' \
    "$work/categorical_issue.log" | sed -E 's/ +/ /g' | tr '\n' ';')"
fi

# Session 10 (helper C), issue 11's block-row candidates against block-row
# itself in the same part: split rows ("block-row-c2x", "-c4x", "-c8x":
# 2, 4, 8 times the planner's blocks a row, up to 16; K = 4,096 to 2^15
# and 64 rows of 4,096 and 16,384), a thread a draw at one
# draw ("block-row-td": K = 257 to 16,384; block-row itself draws those by
# a warp since session 10), and lane groups (K = 32 to 512: 16 lanes a row
# from 257, against block-row there); about 150 timings.
if want catblock; then
  for label in block-row block-row-c2x block-row-c4x block-row-c8x \
      block-row-td lane-groups; do
    timeout 100 ./categorical_bench --issue --quick --kernel $label \
      --csv "$work/catblock_$label.csv" >> "$work/catblock.log" 2>&1
    summary "categorical $label: rc=$? $(grep -E "^$label " \
      "$work/catblock.log" | sed -E 's/ +/ /g' | tr '\n' ';')"
  done
fi

# Session 11 (helper R), issue 11 at large K: block-row's streamed chunks
# ("block-row-st": a block reads its chunk of at most 64 KiB twice, the
# second pass from L2, 16 warps, two blocks an SM; not routed: the
# mid-session H100 call measured 42.5% of copy at K = 16,384 against
# block-row's 55.0, 31.3 against 41.7 at 20,000, 32.1 against 31.4 at
# 2^15, 35.0 against 37.8 at 2^17, with "-st-c2x" and "-st-8w" no better)
# from K = 4,096 to 2^17 at 1, 4 and 32 draws, 64 rows of 4,096, 16,384 and
# 2^17, and logits at 2^17, for the record: 29 timings. Block-row itself
# (its thread draws loading a group's 4 vectors side by side since session
# 11) is in the categorical part.
if want catstream; then
  timeout 90 ./categorical_bench --issue --quick --kernel block-row-st \
    --csv "$work/catstream_block-row-st.csv" > "$work/catstream.log" 2>&1
  summary "categorical block-row-st: rc=$? $(grep -E "^block-row-st " \
    "$work/catstream.log" | sed -E 's/ +/ /g' | tr '\n' ';')"
fi

# Session 11 (helper C), issue 11 at K <= 512: the lanes kernel (routed at
# K = 33 to 60 for up to 4 draws, 61 to 100 for one) beside lane groups,
# and at K = 32 lane groups with their prefix tables forced on
# ("lane-groups-pt") and off ("-ce"; the planner's from 32 draws), K = 32,
# 33, 64, 100, 128, 256, 257, 512 with 1/4/32 draws (about 60 timings),
# then Nsight Compute on lane groups at K = 32 with 1 and 32 draws.
if want catsmall; then
  for label in lanes lane-groups lane-groups-pt lane-groups-ce; do
    timeout 100 ./categorical_bench --issue --quick --kernel $label \
      --csv "$work/catsmall_$label.csv" >> "$work/catsmall.log" 2>&1
    summary "categorical $label: rc=$? $(grep -E "^$label " \
      "$work/catsmall.log" | sed -E 's/ +/ /g' | tr '\n' ';')"
  done
  for kd in 32:32 32:1; do
    timeout 120 ncu --clock-control none --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats \
      --section SchedulerStats --section InstructionStats \
      --section LaunchStats --section ComputeWorkloadAnalysis \
      -k regex:LaneGroups ./categorical_bench --issue --quick \
      --k ${kd%%:*} --draws ${kd##*:} --kernel lane-groups \
      > "$work/catsmall_ncu_${kd/:/_}.log" 2>&1
    summary "catsmall ncu K:D=$kd: rc=$? $(grep -E 'Issue Slots Busy|DRAM Throughput|Executed Instructions  |Registers Per|Achieved Occupancy' \
      "$work/catsmall_ncu_${kd/:/_}.log" | sed -E 's/ +/ /g' | tr '\n' ';')"
  done
fi

# enumerate_ncu LABEL ONLY KERNEL_REGEX LINES PATTERN: Nsight Compute on the
# first launch of KERNEL_REGEX in `enumerate_bench --quick --only=ONLY`, to
# $work/enumerate_LABEL_ncu.log; the summary keeps LINES lines matching
# PATTERN.
enumerate_ncu() {
  timeout 120 ncu --section SpeedOfLight --section Occupancy \
    --section SchedulerStats --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section LaunchStats \
    --section ComputeWorkloadAnalysis --section InstructionStats \
    -k "regex:$3" -c 1 ./enumerate_bench --quick \
    "--only=$2" > "$work/enumerate_$1_ncu.log" 2>&1
  summary "enumerate $1 ncu: rc=$? $(grep -E "$5" "$work/enumerate_$1_ncu.log" \
    | sed -E 's/ +/ /g' | head -"$4" | tr '\n' ';')"
}

# The enumeration kernels (issue 11): enumerate_bench at every size, float
# and double, the pair kernel (m <= 32, a warp per problem) beside the
# direct kernel's configurations and the small-problems path (the server's
# route for these problems) at m = 32 and 16; about 40 s (21 s in session 7
# before the pair kernel, the small path and m = 16; session 9 adds 24
# variants at m = 256 to 4096).
if want enumerate; then
  timeout 150 ./enumerate_bench --json="$work/enumerate_bench.json" \
    > "$work/enumerate_bench.log" 2>&1
  summary "enumerate bench: rc=$? $(grep -E '^(device|(float|double) +m=(32|16) )' \
    "$work/enumerate_bench.log" | sed -E 's/ +/ /g; s/ *\[.*//' | tr '\n' ';')"
  # Issue 11 at m = 256 and 1024 (session 9): the automatic choice, the
  # configurations it took before (g1r5, g1r7), the long-chunk sub-warps and
  # the split tiles.
  summary "enumerate m=256/1024: $(grep -E '^(float|double) +m=(256|1024) ' \
    "$work/enumerate_bench.log" | grep -E 'auto|long|split|g1r5 |g1r7 ' \
    | sed -E 's/ +/ /g; s/ *\[.*//' | tr '\n' ';')"
  # Where the time goes, Nsight Compute on one launch of each, where ncu is
  # installed: the pair kernel's variants (float, m = 32), and session 9's
  # direct configurations at the issue's sizes (ONLY|LABEL|KERNEL).
  if command -v ncu > /dev/null; then
    for v in "float:32:262144:pair (|pair|Pair" \
      "float:32:262144:pair x2|pair_x2|Pair" \
      "float:256:4096:g1r7x4|r7x4|LinearKernel" \
      "float:1024:256:g1r7s4|r7s4|LinearKernel"; do
      IFS='|' read -r only label kernel <<< "$v"
      enumerate_ncu "$label" "$only" "$kernel" 10 \
        'Duration|DRAM Throughput|L1/TEX Cache Throughput|Issue Slots Busy|Issued Warp Per Scheduler|Achieved Occupancy|Registers Per Thread|Waves Per SM'
    done
  fi
fi

# Issue 11, session 11: the tensor-core kernel (enumerate_tensor.cu) where
# kAuto now takes it: kAuto beside dmma k8 t4 and k8 t4p (k8 t4 with the
# next tile prefetched into L2, kAuto's for float products of 193-1536) at
# m = 128, 256, 512 and 1024, float and double (24 rows, under a minute;
# the other session 11 configurations lost in the mid-session run:
# bench/results/enumerate-kernel.md, "Session 11").
if want tensor; then
  specs=""
  for mb in 128:16384 256:4096 512:1024 1024:256; do
    for ty in float double; do
      for v in auto "dmma k8 t4 (" "dmma k8 t4p"; do
        specs="$specs,$ty:$mb:$v"
      done
    done
  done
  timeout 120 ./enumerate_bench --only="${specs#,}" \
    --json="$work/enumerate_tensor.json" > "$work/enumerate_tensor.log" 2>&1
  summary "enumerate tensor: rc=$? $(grep -E '^(float|double) +m=' \
    "$work/enumerate_tensor.log" | sed -E 's/ +/ /g; s/ *\[.*//' | tr '\n' ';')"
fi

# Issue 11, session 11 (helper G): the gamma kernel's tunings (round keys
# from the launch parameters, slow outputs deferred, more warps for float
# without pre-caching; same bits) against the kernel before them ("v2"),
# pre-caching on and off, at shapes 0.3, 1, 2.5, 10 and U(0.1, 10), float32
# and float64, 2^27 outputs: 70 timed rows (the service's choice marked *),
# about 40 s. The summary keeps every row's G samples/s.
if want gamma; then
  timeout 150 ./gamma_bench --json="$work/gamma.json" \
    > "$work/gamma_bench.log" 2>&1
  summary "gamma bench: rc=$? $(grep -E '^(device|float32|float64) ' \
    "$work/gamma_bench.log" | sed -E 's/ +/ /g; s/ [0-9.]+ ms ([0-9.]+) Gsamples\/s .*tuning=(.*)/ \1 \2/' \
    | tr '\n' ';')"
fi

# Every ratio of issue 13 in one command (its "Done when"), about 400 s
# (bounded at 570 s): small requests in both patterns (floor, the default
# CUDA server and SMALL_VARIANTS: small batches from the CPU,
# --cpu_below_items, and the CPU backend; 3 rounds, p99), the 16 MB upload
# one and four at a time, 10M float32 samples in one answer and as a
# stream (2 rounds each), and the CUDA-vs-CPU crossover per RPC; the
# report (a row per target, met or missed with the profile of a miss) is
# issue13/floor-$ISSUE13_NAME.md in results.tgz, and in the summary.
# Variables: issue13.sh's header.
if want issue13; then
  timeout 570 ./issue13.sh . "$work/issue13" > "$work/issue13.log" 2>&1
  summary "issue 13: rc=$? $(tr '\n' ';' < "$work/issue13.log")"
  report=$work/issue13/floor-${ISSUE13_NAME:-issue13}.md
  [ -f "$report" ] && sed -n '/^## Targets/,/^## Small/p' "$report" \
    | tee -a "$work/summary.txt"
fi

tar -C "$work" -czf "$out/results.tgz" .
cp "$work/summary.txt" "$out/summary.txt"
