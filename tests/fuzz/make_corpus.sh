#!/usr/bin/env bash
# Regenerates the binary seeds of the fuzz corpus from its text seeds: for
# each tests/fuzz/corpus/<target>/NAME.txt (a request in protobuf text
# format after a '#' comment line, read as text by the targets), writes
# NAME.bin, the same request in the wire format, with protoc --encode. The
# stream target's seeds start with one letter that picks the RPC (c, g, b),
# kept in front of the binary. Run after editing a .txt seed; commit both.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
proto_dir="$root/proto"
proto=sampler/v1/sampler.proto

type_of() {  # target [letter] -> message type
  case "$1" in
    enumerate) echo sampler.v1.EnumerateRequest ;;
    categorical) echo sampler.v1.SampleCategoricalRequest ;;
    gamma) echo sampler.v1.SampleGammaRequest ;;
    dirichlet) echo sampler.v1.SampleDirichletRequest ;;
    boards) echo sampler.v1.SampleBoardsRequest ;;
    stream)
      case "$2" in
        c) echo sampler.v1.SampleCategoricalStreamRequest ;;
        g) echo sampler.v1.SampleGammaStreamRequest ;;
        b) echo sampler.v1.SampleBoardsStreamRequest ;;
        *) echo "make_corpus: unknown stream letter '$2'" >&2; return 1 ;;
      esac ;;
    *) echo "make_corpus: unknown target $1" >&2; return 1 ;;
  esac
}

n=0
for txt in "$here"/corpus/*/*.txt; do
  target=$(basename "$(dirname "$txt")")
  bin="${txt%.txt}.bin"
  if [ "$target" = stream ]; then
    letter=$(head -c1 "$txt")
    type=$(type_of stream "$letter")
    { printf '%s' "$letter"; tail -c +2 "$txt" |
        protoc --proto_path="$proto_dir" --encode="$type" "$proto"; } > "$bin"
  else
    type=$(type_of "$target")
    protoc --proto_path="$proto_dir" --encode="$type" "$proto" < "$txt" > "$bin"
  fi
  n=$((n + 1))
done
echo "make_corpus: encoded $n seeds"
