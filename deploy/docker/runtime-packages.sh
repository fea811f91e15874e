#!/bin/sh
# runtime-packages.sh BINARY...
#
# Prints, one per line, the Debian/Ubuntu packages that hold the shared
# libraries BINARY... load (as `ldd` resolves them on this machine), less
# those every CUDA runtime image already has: the C and C++ runtime (libc6,
# libgcc-s1, libstdc++6) and NVIDIA's CUDA packages (cuda-*, libcu*, libnv*).
#
# The Dockerfile runs it in the build stage, which is the same Ubuntu release
# as the runtime stage, and the runtime stage installs exactly what it
# printed: the final image gets the runtime libraries the binaries need and no
# -dev package, and the list never goes stale when a dependency is added.
# On Ubuntu 24.04 that should be libabsl20220623t64, libc-ares2,
# libcivetweb1, libgrpc++1.51t64, libgrpc29t64, libprometheus-cpp-core1.0,
# libprometheus-cpp-pull1.0, libprotobuf32t64, libre2-10, libssl3t64 and
# zlib1g (on Debian 12, where tests/deploy runs it, the same without t64).
#
# Fails (exit 1) when a library is not found, or is found but belongs to no
# package, so that an image cannot be built without one of its libraries.
# libcuda.so.1 and libnvidia-ml.so.1 may be missing: the NVIDIA container
# runtime mounts them from the host's driver when the container starts. The
# CUDA toolkit's own libraries (under /usr/local/cuda*) are skipped: the CUDA
# runtime image has them.
set -eu

if [ $# -eq 0 ]; then
  echo "usage: $0 BINARY..." >&2
  exit 2
fi

libraries=$(mktemp)
trap 'rm -f "$libraries"' EXIT

for binary in "$@"; do
  if ! ldd "$binary" >/dev/null 2>&1; then
    echo "runtime-packages: ldd cannot read $binary" >&2
    exit 1
  fi
  # Lines are "name => /path (address)", "name => not found" or lines
  # without "=>" (the vDSO, the dynamic loader itself).
  ldd "$binary" | while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if [ "$path" = "not" ]; then
      case "$name" in
        libcuda.so.1 | libnvidia-ml.so.1) ;;
        *) echo "runtime-packages: $binary needs $name, which is not found" >&2
           echo "MISSING" ;;
      esac
      continue
    fi
    case "$(readlink -f "$path")" in
      /usr/local/cuda*) ;;  # the CUDA toolkit's: the runtime image has them
      *) echo "$path" ;;
    esac
  done >>"$libraries"
done
if grep -q '^MISSING$' "$libraries"; then
  exit 1
fi

# dpkg knows each file by the path its package installed it at, which on a
# merged-/usr system may be /lib/... or /usr/lib/... whatever path ldd
# printed, and may be the symlink (libfoo.so.1) or its target. Every
# candidate path of every library goes to one dpkg-query call (it reads its
# database once per call).
candidates=$(mktemp)
owners=$(mktemp)
trap 'rm -f "$libraries" "$candidates" "$owners"' EXIT
for library in $(sort -u "$libraries"); do
  for path in "$library" "$(readlink -f "$library")"; do
    printf '%s %s\n%s /usr%s\n%s %s\n' "$library" "$path" "$library" "$path" \
      "$library" "${path#/usr}"
  done
done | sort -u >"$candidates"
# "package[:arch][, package...]: path" for each candidate some package has.
# shellcheck disable=SC2046
dpkg-query -S $(cut -d' ' -f2 "$candidates") 2>/dev/null >"$owners" || true

found=$(mktemp)
trap 'rm -f "$libraries" "$candidates" "$owners" "$found"' EXIT
if ! awk '
  FNR == NR {  # dpkg-query output: the first package owning each path
    if ($0 ~ /^diversion /) next
    split($0, parts, ": ")
    package = parts[1]; sub(/[:,].*/, "", package)
    if (!(parts[2] in owner)) owner[parts[2]] = package
    next
  }
  {  # candidates: library path
    if ($2 in owner) { found[$1] = owner[$2] } else if (!($1 in found)) { found[$1] = "" }
  }
  END {
    status = 0
    for (library in found) {
      if (found[library] == "") {
        print "runtime-packages: no package holds " library > "/dev/stderr"
        status = 1
      } else {
        print found[library]
      }
    }
    exit status
  }' "$owners" "$candidates" >"$found"; then
  exit 1
fi
sort -u "$found" | grep -v -E '^(libc6|libgcc-s1|libstdc\+\+6|cuda-.*|libcu.*|libnv.*)$' || true
