#!/usr/bin/env bash
# The whole test suite from a fresh machine: install what is missing, build,
# lint the API, run every test. GPU tests skip where no GPU is present.
# Further stages (fuzzing, sanitizer builds) live in tools/ci/*.sh and run
# after the main suite, in name order.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/deps.sh"
"$root/tools/build.sh"
echo "== buf lint"
(cd "$root" && tools/buf/node_modules/.bin/buf lint) && echo "buf lint: passed"
echo "== tests"
(cd "$root/build" && ctest --output-on-failure -j"$(nproc)" --timeout 900)
for stage in "$root"/tools/ci/*.sh; do
  [ -e "$stage" ] || continue
  echo "== $(basename "$stage" .sh)"
  "$stage"
done
