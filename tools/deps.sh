#!/usr/bin/env bash
# Installs what the build and the tests need, on Debian 12 or Ubuntu 22.04+,
# skipping whatever is already there. Safe to run again.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev prometheus-cpp-dev librandom123-dev
  libgtest-dev libgmock-dev libbenchmark-dev libboost-math-dev
  python3 python3-grpcio python3-protobuf
  python3-numpy python3-venv python3-setuptools python3-pip  # client/python
  clang-format  # tools/check_format.sh
  prometheus docker-compose nginx python3-yaml  # tests/deploy
  clang-14 libclang-rt-14-dev  # tools/ci/20-fuzz.sh: libFuzzer, ASan, UBSan
  openssl  # tests/security makes its certificates (libssl-dev comes with libgrpc-dev)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done

# Node.js and npm may come from elsewhere than Debian (a newer npm, say):
# only ask apt for them when there is no npm at all.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)

if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

# buf (proto lint) comes from npm, at the exact version tools/buf/package.json pins.
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -x "$here/buf/node_modules/.bin/buf" ]; then
  echo "deps: installing buf from npm"
  (cd "$here/buf" && npm install --no-audit --no-fund --no-save --loglevel=error)
fi

# The Node example client's packages, at the exact versions its package.json pins.
node_example="$here/../client/examples/node"
if [ ! -d "$node_example/node_modules/@grpc/grpc-js" ] ||
   [ ! -d "$node_example/node_modules/@grpc/proto-loader" ]; then
  echo "deps: installing the Node example's packages from npm"
  (cd "$node_example" && npm install --no-audit --no-fund --no-save --loglevel=error)
fi
