#!/usr/bin/env bash
# Builds and starts the sampler server: gRPC on :50051, Prometheus metrics on
# :9464, on the GPU when one is usable, otherwise on the CPU. Extra arguments
# go to sampler-server (e.g. --listen 127.0.0.1:6000); Ctrl-C stops it
# gracefully.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/deps.sh"
"$root/tools/build.sh"
exec "$root/build/server/sampler-server" "$@"
