#!/usr/bin/env bash
# Torrents made by `seekless torrent create` (v1, v2, hybrid; single file and
# directory) must load in libtorrent 2.0 and its own hash check must find the
# data complete. Needs Debian's python3-libtorrent.
# Usage: libtorrent_accepts.sh [SEEKLESS]: the binary to make them with (e.g.
# the release step's); without it, `cargo build` makes one.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../../.."
seekless=${1:-}
if [ -z "$seekless" ]; then
    cargo build --quiet --locked -p seekless
    seekless="${CARGO_TARGET_DIR:-target}/debug/seekless"
fi
[ -x "$seekless" ] || { echo "libtorrent_accepts: $seekless is not an executable" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/share/sub"
head -c 300000 /dev/urandom > "$work/share/a.bin"
head -c 5 /dev/urandom > "$work/share/sub/b"
head -c 70001 /dev/urandom > "$work/share/sub/c"
: > "$work/share/empty"
head -c 1000000 /dev/urandom > "$work/single.bin"
for v in v1 v2 hybrid; do
    "$seekless" torrent create "$work/share" -o "$work/share-$v.torrent" --"$v" \
        --piece-length 16384 --tracker http://tracker.example/announce
    "$seekless" torrent create "$work/single.bin" -o "$work/single-$v.torrent" --"$v"
done
/usr/bin/python3 - "$work" <<'PY'
import glob, sys, time
import libtorrent as lt

work = sys.argv[1]
ses = lt.session({"enable_dht": False, "enable_lsd": False, "enable_upnp": False,
                  "enable_natpmp": False, "listen_interfaces": "127.0.0.1:0"})
failed = 0
for path in sorted(glob.glob(work + "/*.torrent")):
    ti = lt.torrent_info(path)
    p = lt.add_torrent_params()
    p.ti = ti
    p.save_path = work
    h = ses.add_torrent(p)
    deadline = time.time() + 30
    while time.time() < deadline:
        s = h.status()
        if s.state == lt.torrent_status.seeding or s.errc.value() != 0:
            break
        if s.state == lt.torrent_status.downloading and not s.is_seeding:
            break
        time.sleep(0.05)
    s = h.status()
    ok = s.state == lt.torrent_status.seeding and s.progress == 1.0
    print(f"{path.rsplit('/', 1)[1]}: {'complete' if ok else 'NOT complete'} ({s.state}, {s.errc.message()})")
    failed += not ok
    ses.remove_torrent(h)
sys.exit(1 if failed else 0)
PY
