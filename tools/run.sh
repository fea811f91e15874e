#!/usr/bin/env bash
# Builds and runs the demo: one sample of each kind from the CPU
# implementations. (The gRPC server replaces this when it lands.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/deps.sh"
"$root/tools/build.sh"
exec "$root/build/tools/sampler-demo" "$@"
