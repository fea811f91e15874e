#!/usr/bin/env bash
# Fails when a C++ or CUDA source of the project is not as clang-format
# (the repository's .clang-format: Google style) would write it, naming each
# such file and the first differences. tools/test.sh runs it after the build.
# To fix: clang-format -i FILE... (clang-format 14, Debian's).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
format=${CLANG_FORMAT:-clang-format}
if ! command -v "$format" >/dev/null; then
  echo "check_format: $format not found (tools/deps.sh installs clang-format)" >&2
  exit 1
fi
# Tracked sources only: generated code lives in build/, third-party code in
# node_modules/.
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh' | grep -v node_modules/)
if [ ${#files[@]} -eq 0 ]; then
  echo "check_format: no source file found (not a git checkout?)" >&2
  exit 1
fi
bad=0
for f in "${files[@]}"; do
  if ! "$format" --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "check_format: $f is not clang-formatted:"
    "$format" "$f" | diff -u "$f" - | head -20
    bad=$((bad + 1))
  fi
done
echo "check_format: ${#files[@]} files, $bad not formatted"
[ "$bad" -eq 0 ]
