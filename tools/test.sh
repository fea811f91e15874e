#!/usr/bin/env bash
# The whole test suite from a fresh machine: install what is missing, build,
# lint the API, run every test. GPU tests skip where no GPU is present
# (exit code 77, CTest's SKIP_RETURN_CODE; never by matching their output).
# Further stages (fuzzing, sanitizer builds) live in tools/ci/*.sh and run
# after the main suite, in name order.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/deps.sh"
"$root/tools/build.sh"
echo "== buf lint"
(cd "$root" && tools/buf/node_modules/.bin/buf lint) && echo "buf lint: passed"
echo "== format"
"$root/tools/check_format.sh"
echo "== tests"
# ctest, then the check that every GoogleTest binary ran a test (a binary
# with none, a filter matching nothing, all tests skipped, or a main that
# never ran them would pass ctest). GPU tests report skipped by exit code.
"$root/tools/ctest_checked.sh" "$root/build" --output-on-failure \
  -j"$(nproc)" --timeout 900
for stage in "$root"/tools/ci/*.sh; do
  [ -e "$stage" ] || continue
  echo "== $(basename "$stage" .sh)"
  "$stage"
done
