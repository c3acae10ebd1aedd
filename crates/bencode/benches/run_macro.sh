#!/usr/bin/env bash
# Macro benchmark for the bencode engine: builds the libtorrent 2.0 harness
# (needs Debian's libtorrent-rasterbar-dev and g++), then runs our decoder and
# its peers side by side on the same inputs.
#   crates/bencode/benches/run_macro.sh            # 1 s per input and decoder
#   SEEKLESS_BENCH_MS=3000 crates/bencode/benches/run_macro.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${CARGO_TARGET_DIR:-$here/../../../target}"
mkdir -p "$target"
harness="$target/bdecode_harness"
if g++ -O2 -std=c++17 "$here/libtorrent/bdecode_harness.cpp" -o "$harness" -ltorrent-rasterbar; then
    export SEEKLESS_LT_HARNESS="$harness"
    echo "libtorrent: $(dpkg-query -W -f='${Version}' libtorrent-rasterbar-dev 2>/dev/null || echo unknown)"
else
    echo "libtorrent harness did not build (apt-get install libtorrent-rasterbar-dev g++); skipping it" >&2
fi
cd "$here/../../.."
cargo bench -p seekless-bencode --bench bencode_macro
