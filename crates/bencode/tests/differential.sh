#!/usr/bin/env bash
# Differential test of the decoder against libtorrent 2.0's bdecode: same
# verdict, error kind and error offset on random, structured and mutated
# inputs. Needs g++ and Debian's libtorrent-rasterbar-dev.
#   crates/bencode/tests/differential.sh [COUNT] [SEED]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../../.."
target="${CARGO_TARGET_DIR:-$root/target}"
mkdir -p "$target"
harness="$target/bdecode_harness"
g++ -O2 -std=c++17 "$here/../benches/libtorrent/bdecode_harness.cpp" -o "$harness" -ltorrent-rasterbar
cd "$root"
cargo run --quiet -p seekless-bencode --example differential -- "$harness" "${1:-100000}" "${2:-24301}"
