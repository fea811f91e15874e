#!/usr/bin/env bash
# Configures and builds everything into build/ (Ninja, ccache). CUDA code is
# built when nvcc is found (/usr/local/cuda or PATH), skipped otherwise.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build" -j"$(nproc)"
