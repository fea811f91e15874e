#!/usr/bin/env bash
# One call on a GPU host, from a bundle made by tools/bundle-bench.sh: the
# peers and the four kernel benchmarks on the same GPU, one after the other,
# so that every ratio and every fraction of the copy bandwidth in the
# combined report (bench/summarize_kernels.py) comes from one invocation.
#
#   1. peers_gpu.py (../shared/bench: PyTorch, CuPy, JAX; the copy ceiling);
#   2. the same-invocation peers peers_gpu.py lacks (peers_extra.py, below):
#      two-colour 19x19 and 32x32 boards as int8 boards (the boards report's
#      peer), torch._standard_gamma in float64, rFFT at a power-of-two length,
#      grouped conv1d and rFFT in float64;
#   3. gamma_bench --json, categorical_bench --csv (and --issue: issue 11's
#      K and draws table), boards_bench, enumerate_bench --json (stdout of
#      each kept as well).
#
# Everything goes to a work folder, then $OUT/kernels.tgz; a summary to
# stdout and $OUT/summary.txt. Each step runs under a time limit so that the
# whole session ends within BUDGET_S seconds (default 340); enumerate_bench
# runs last and falls back to --quick when little time is left (its stdout
# lines are flushed per variant, so a cut run still reports what it timed).
set -uo pipefail
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp/kernels-session}
mkdir -p "$out"
work=$(mktemp -d)
t0=$(date +%s)
budget=${BUDGET_S:-340}
summary() { echo "$*" | tee -a "$work/summary.txt"; }
left() { echo $((budget - ($(date +%s) - t0))); }

# step NAME CAP COMMAND...: output to $work/NAME.log, at most CAP seconds and
# never past the budget (15 s kept for packing up).
step() {
  local name=$1 cap=$2; shift 2
  local l=$(($(left) - 15))
  ((l < cap)) && cap=$l
  if ((cap < 5)); then
    summary "$name: skipped (no time left)"
    return
  fi
  local s=$(date +%s)
  timeout -k 5 "$cap" "$@" > "$work/$name.log" 2>&1
  local rc=$?
  summary "$name: rc=$rc in $(($(date +%s) - s)) s (limit $cap s)"
}

cp BUILD_INFO.txt "$work/" 2>/dev/null
date -u +%Y-%m-%dT%H:%M:%SZ > "$work/date.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv > "$work/gpu.txt" 2>&1
cat "$work/gpu.txt"

# Same-invocation peers that peers_gpu.py does not time. Also finds the
# cuFFT that torch loads (enumerate_bench opens libcufft with dlopen).
cat > "$work/peers_extra.py" <<'EOF'
"""Peers peers_gpu.py lacks, timed like it (CUDA events, median of repeats
after 3 warm-ups): int8 boards of one or two colours by rand+topk+scatter and
double argsort (bench/results/boards-kernel.md's peer script),
torch._standard_gamma in float64 (gamma-kernel.md's torch script), rFFT
convolution at a power-of-two length (enumerate-kernel.md's extra peer),
grouped conv1d and rFFT in float64 (the float64 enumeration target's peers).
Writes peers_extra.json and cufft_dir.txt beside itself."""
import json, os, statistics, sys
import torch

dev = torch.device("cuda")
here = os.path.dirname(os.path.abspath(__file__))
res = []

def bench(fn, reps=10, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    return statistics.median(ts)

def rec(kind, name, params, seconds, rate, unit):
    r = {"kind": kind, "peer": name, "params": params, "seconds": seconds,
         "rate": rate, "unit": unit}
    res.append(r)
    print(f"{kind:11s} {name:22s} {json.dumps(params):50s} {rate:12.4g} {unit}", flush=True)

print(torch.__version__, torch.cuda.get_device_name(0), flush=True)

def topk_boards(B, N, ks):  # one int8 board per position, colour c+1
    def f():
        idx = torch.rand(B, N, device=dev).topk(sum(ks), dim=-1).indices
        board = torch.zeros(B, N, dtype=torch.int8, device=dev); start = 0
        for c, k in enumerate(ks):
            board.scatter_(1, idx[:, start:start + k], c + 1); start += k
        return board
    return f

def argsort_boards(B, N, ks):
    def f():
        rank = torch.rand(B, N, device=dev).argsort(-1).argsort(-1)
        board = torch.zeros(B, N, dtype=torch.int8, device=dev); start = 0
        for c, k in enumerate(ks):
            board += ((rank >= start) & (rank < start + k)).to(torch.int8) * (c + 1); start += k
        return board
    return f

for N, ks, B in ((1024, (512,), 1 << 18), (1024, (16,), 1 << 18),
                 (361, (120,), 1 << 20), (361, (120, 120), 1 << 20)):
    for name, make in (("rand+topk+scatter", topk_boards), ("double argsort", argsort_boards)):
        t = bench(make(B, N, ks))
        rec("boards", name, {"sites": N, "stones": list(ks), "batch": B}, t, B / t / 1e6, "Mboards/s")
    torch.cuda.empty_cache()

N = 1 << 27
g = torch.Generator(device="cuda"); g.manual_seed(1)
for alpha in (0.3, 1.0, 2.5, 10.0, None):
    al = (torch.empty(N, device=dev, dtype=torch.float64).uniform_(0.1, 10.0, generator=g)
          if alpha is None else torch.full((N,), alpha, device=dev, dtype=torch.float64))
    t = bench(lambda: torch._standard_gamma(al))
    rec("gamma", "torch._standard_gamma", {"precision": "float64", "shape": alpha if alpha else "U(0.1,10)"},
        t, N / t / 1e9, "Gsamples/s")
    del al
torch.cuda.empty_cache()

for m in (32, 256, 1024):
    B = max(1, (1 << 24) // (m * m) * 16)  # peers_gpu.py's batch
    p = torch.empty(B, m, device=dev).uniform_(); q = torch.empty(B, m, device=dev).uniform_()
    L = 2 * m - 1; P2 = 1 << (L - 1).bit_length()
    fn = lambda: torch.fft.irfft(torch.fft.rfft(p, n=P2) * torch.fft.rfft(q, n=P2), n=P2)[:, :L]
    t = bench(fn, reps=15)
    rec("enumerate", "rfft n=pow2", {"m": m, "batch": B, "n": P2}, t, B / t / 1e6, "Mpairs/s")
    del p, q

# Float64 peers for issue 11's float64 enumeration target (>= 3x): the
# peers_gpu.py pair (grouped conv1d, rFFT at n = 2m - 1) in float64.
import torch.nn.functional as F
for m in (32, 256, 1024):
    B = max(1, (1 << 24) // (m * m) * 16)
    p = torch.empty(B, m, device=dev, dtype=torch.float64).uniform_()
    q = torch.empty(B, m, device=dev, dtype=torch.float64).uniform_()
    conv = lambda: F.conv1d(p.view(1, B, m), q.flip(-1).view(B, 1, m), padding=m - 1, groups=B)
    t = bench(conv, reps=10)
    rec("enumerate", "conv1d grouped", {"m": m, "batch": B, "precision": "float64"}, t, B / t / 1e6, "Mpairs/s")
    L = 2 * m - 1
    fft = lambda: torch.fft.irfft(torch.fft.rfft(p, n=L) * torch.fft.rfft(q, n=L), n=L)
    t = bench(fft, reps=10)
    rec("enumerate", "rfft n=2m-1", {"m": m, "batch": B, "precision": "float64"}, t, B / t / 1e6, "Mpairs/s")
    del p, q
    torch.cuda.empty_cache()

with open(os.path.join(here, "peers_extra.json"), "w") as f:
    json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "results": res}, f, indent=1)
libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libcufft" in l})
if libs:
    with open(os.path.join(here, "cufft_dir.txt"), "w") as f:
        f.write(os.path.dirname(libs[0]) + "\n")
print("cufft:", libs, flush=True)
EOF

step peers 120 env OUT="$work" python3 peers_gpu.py
step peers_extra 70 python3 "$work/peers_extra.py"
step gamma_bench 100 ./gamma_bench --json="$work/gamma.json"
step categorical_bench 90 ./categorical_bench --csv "$work/categorical.csv"
step categorical_issue 240 ./categorical_bench --issue --quick \
  --csv "$work/categorical_issue.csv"
step boards_bench 60 ./boards_bench

# cuFFT for enumerate_bench's FFT path: where torch loaded it, else the
# usual places.
cufft_dir=$(cat "$work/cufft_dir.txt" 2>/dev/null)
if [ -z "$cufft_dir" ]; then
  py_prefix=$(python3 -c 'import sys; print(sys.prefix)' 2>/dev/null)
  for f in "$py_prefix"/lib/python3*/site-packages/nvidia/*/lib/libcufft.so.* \
           "$py_prefix"/lib/python3*/site-packages/nvidia/*/*/lib/libcufft.so.* \
           /usr/local/cuda*/lib64/libcufft.so.* \
           /usr/local/cuda*/targets/x86_64-linux/lib/libcufft.so.*; do
    [ -e "$f" ] && { cufft_dir=$(dirname "$f"); break; }
  done
fi
summary "cufft dir: ${cufft_dir:-none found}"
enum_args=(--json="$work/enumerate.json")
if (($(left) < 60)); then
  enum_args+=(--quick)
  summary "enumerate_bench: --quick ($(left) s left)"
fi
step enumerate_bench 120 env LD_LIBRARY_PATH="$PWD/lib${cufft_dir:+:$cufft_dir}" \
  ./enumerate_bench "${enum_args[@]}"

summary "session: $(($(date +%s) - t0)) s"
grep -hE '^(d2d copy|device|ceilings)' "$work"/*.log | head -8
grep -h 'copy' "$work/enumerate_bench.log" | head -1
cat "$work/peers.log" 2>/dev/null | cut -c1-110
tar -C "$work" -czf "$out/kernels.tgz" .
cp "$work/summary.txt" "$out/summary.txt"
ls -la "$out"
