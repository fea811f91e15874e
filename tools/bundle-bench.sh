#!/usr/bin/env bash
# Gathers what bench/kernels_session.sh runs into a self-contained folder to
# carry to a GPU host: the four kernel benchmarks (debug information
# stripped) and their shared libraries, the peers script and the session
# script. Build the benchmarks first:
#   cmake --build build --target boards_bench categorical_bench \
#     enumerate_bench gamma_bench
#   tools/bundle-bench.sh bundle-bench
# then, on the GPU host: bash bundle-bench/kernels_session.sh (writes
# $OUT/kernels.tgz). The carried folder is capped (64 MiB with the tree).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/bundle-bench}
b=${BUILD_DIR:-$root/build}
shared=${SHARED_DIR:-$root/../shared}
bundle_runtime=${BUNDLE_RUNTIME:-$shared/tools/bundle-runtime}
benches="boards_bench categorical_bench enumerate_bench gamma_bench"
bins=()
for t in $benches; do bins+=("$b/bench/$t"); done
"$bundle_runtime" "$dest" "${bins[@]}"
for t in $benches; do strip --strip-debug "$dest/$t"; done
cp "$shared/bench/peers_gpu.py" "$root/bench/kernels_session.sh" "$dest/"
chmod +x "$dest/kernels_session.sh"
# What was bundled, for the record (commit and whether the tree was clean).
{
  echo "commit $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
  git -C "$root" status --porcelain 2>/dev/null | sed 's/^/dirty /'
  echo "bundled $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$dest/BUILD_INFO.txt"
size_kb=$(du -sk "$dest" | cut -f1)
echo "bundle-bench: $((size_kb / 1024)) MiB in $dest"
if [ "$size_kb" -gt $((60 * 1024)) ]; then
  echo "bundle-bench: over 60 MiB: the device carries at most 64 MiB" >&2
  exit 1
fi
