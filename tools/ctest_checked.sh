#!/usr/bin/env bash
# ctest_checked.sh BUILD_DIR [CTEST_ARGS...]: runs ctest in BUILD_DIR, then
# checks that every GoogleTest binary that ran reported at least one test
# that ran (tools/check_tests_ran.py): a binary with no test, a filter that
# matched nothing, tests that all skipped, or a main that never ran them
# would otherwise pass. Exits non-zero if ctest failed or the check did.
#
# Each GoogleTest binary writes its XML report into
# BUILD_DIR/test-reports/gtest/ (GTEST_OUTPUT), ctest its JUnit summary into
# BUILD_DIR/test-reports/ctest.xml, and the check reads both along with the
# test list (labels name the binaries that must write a report).
set -uo pipefail
build=$(cd "$1" && pwd)
shift
reports="$build/test-reports"
rm -rf "$reports"
mkdir -p "$reports/gtest"
here=$(cd "$(dirname "$0")" && pwd)
python3=python3
[ -x /usr/bin/python3 ] && python3=/usr/bin/python3
ctest=${CTEST:-ctest}

GTEST_OUTPUT="xml:$reports/gtest/" "$ctest" --test-dir "$build" \
  --output-junit "$reports/ctest.xml" "$@"
ctest_rc=$?
if ! "$ctest" --test-dir "$build" --show-only=json-v1 > "$reports/tests.json"
then
  echo "ctest_checked: could not list the tests" >&2
  exit 1
fi
"$python3" "$here/check_tests_ran.py" --reports "$reports/gtest" \
  --ctest-junit "$reports/ctest.xml" --tests-json "$reports/tests.json"
check_rc=$?
if [ "$ctest_rc" -ne 0 ]; then exit "$ctest_rc"; fi
exit "$check_rc"
