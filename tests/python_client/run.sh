#!/usr/bin/env bash
# The Python client package, installed as client/python/README.md says (a
# venv that sees Debian's python3-grpcio, python3-protobuf and python3-numpy;
# pip with no index and no build isolation), then its tests against live
# servers. The package is built from a copy, so the source tree stays clean.
#
#   run.sh SERVER_BINARY PYTHON3 REPO_ROOT WORK_DIR
set -euo pipefail
server=$1 python=$2 root=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
cp -r "$root/client/python" "$work/src"
"$python" -m venv --system-site-packages "$work/venv"
SAMPLER_PROTO_DIR="$root/proto" "$work/venv/bin/pip" install --quiet \
  --no-index --no-build-isolation "$work/src"
# From the work folder, so that `import sampler_client` finds the installed
# package (with its generated stubs), not a source folder.
cd "$work"
SAMPLER_SERVER=$server "$work/venv/bin/python" -m unittest -v \
  "$work/src/tests/test_client.py"
