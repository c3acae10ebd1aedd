#!/usr/bin/env bash
# Checks the ARM64 Linux binary under qemu and the Windows seekless.exe under
# Wine against the x86-64 Linux binary: each command is run by both with the
# same inputs, in directories laid out alike (so that file names in outputs
# agree), and what they print and write is compared byte for byte, exit
# statuses too.
#
#   scripts/check-platforms.sh --native PATH [--aarch64 PATH] [--windows PATH] [--slow]
#
#   --native PATH   the x86-64 Linux seekless (the reference; required)
#   --aarch64 PATH  the aarch64 Linux seekless, run with qemu-aarch64-static
#   --windows PATH  seekless.exe, run with Wine (wine64, or wine)
#   --slow          also the checks that take minutes under emulation:
#                   `update --base-url` (it asks for every one of the
#                   1,048,576 ranges) and, under Wine, `export --ranges`
#                   (a million files)
#   --update-on LIST  `update --base-url` on these platforms only
#                   (aarch64,windows). CI runs neither: a million
#                   requests take 150-250 s under qemu and 270-460 s
#                   under Wine 8.0 (at --concurrency 16; at the default
#                   256 it stalled half-way there, in two runs here),
#                   against 35-45 s natively (quiet machine)
#
# CI passes the release artifacts (target/release-artifacts/, as
# scripts/release.sh writes them). A platform whose binary is not given, or
# whose emulator is missing, is reported SKIPPED with the reason.
#
# For each emulated platform:
#  1. `echo password | seekless pwned check` (the built-in sample);
#  2. prepare, check (passwords and --hashes, present and absent), export
#     (stdout, -o --crlf, --ranges; not --ranges under Wine without --slow),
#     stats and verify, on generated SHA-1 and NTLM corpora of a few thousand
#     lines; for Windows also the SHA-1 corpus with CRLF line ends and as
#     UTF-16 with a byte-order mark (PowerShell 5.1's `>`): every index must
#     be the native one's bytes; `gzip-ranges` of the SHA-1 index (the
#     native file's bytes), then `verify` of both;
#  3. indexes and bundles written by one binary read and applied by the
#     other, both ways;
#  4. a bundle made by `pwned diff` natively, applied with `update
#     --from-bundle`: the same index as the native apply; a damaged bundle,
#     a truncated index and missing paths refused with exit 2 and one line
#     naming the file, the directory's files unchanged;
#  5. (--slow) `update --base-url` from a native `pwned serve` on 127.0.0.1:
#     the same index as a native update, but for the time the update
#     finished (header bytes 52..56 and 60..64 are the checksums covering
#     it, and the 8 bytes in the source section);
#  6. the emulated `pwned serve` over HTTP and HTTPS (a self-signed
#     certificate made with openssl): /range/ answers (plain, gzip from the
#     gzip ranges file, brotli, 304 on revalidation), /check, errors and
#     /health's first four fields,
#     each with its status and headers but the date, equal to the native
#     serve's;
#  7. the served index replaced by the emulated binary (`update
#     --from-bundle`, then `prepare -o` the same path) while curl asks for
#     a range in a loop: every request must succeed and the new answer
#     come within 15 s;
#  8. Windows only: paths with a drive letter, backslashes and a space
#     (Z:\…\dir with space\…; Wine maps Z: to /) given to prepare, check,
#     update --from-bundle and verify;
#  9. bencode check/dump/encode, torrent info/create/verify, blocks
#     scan/list/linearize on a regtest chain made from the blocks crate's
#     test data, exhash apply (stdout and the table file) and bench --json
#     (its counts, not its times).
# How long each platform took is printed at the end.
#
# Everything listens on and talks to 127.0.0.1 only, on ephemeral ports.
# Background processes and the temporary directory are removed on exit,
# however it exits. Under Wine, the prefix is $WINEPREFIX when set, else
# one kept under the target directory (target/check-platforms/wine-prefix;
# made on first use, ~30 s); seekless.exe runs from a copy in the
# temporary directory, beside a stand-in bcryptprimitives.dll
# (scripts/wine/bcryptprimitives.c) when this Wine lacks ProcessPrng.
#
# Needs: bash, python3, curl (with HTTP/2), openssl, cmp, diff, sha256sum;
# qemu-aarch64-static (Debian's qemu-user-static) for aarch64; wine64 or wine
# (Debian's wine, wine64) and x86_64-w64-mingw32-gcc (gcc-mingw-w64-x86-64)
# for Windows.
#
# Exit status: 0 when every platform given passed; 1 when a check failed;
# 2 on a usage error or a missing tool the native checks need; 3 when none
# failed but a platform given was skipped (its emulator is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
# Finding Wine, its prefix, the ProcessPrng stand-in.
. scripts/wine/setup.sh

say() { echo "platforms: $*"; }
fail() {
    echo "platforms: $*" >&2
    exit 2
}

native=
aarch64=
windows=
slow=
update_on=
while [ $# -gt 0 ]; do
    case "$1" in
        --native | --aarch64 | --windows)
            [ $# -ge 2 ] || fail "$1 needs a path"
            [ -f "$2" ] || fail "$1 $2: no such file"
            declare "${1#--}=$(realpath "$2")"
            shift 2
            ;;
        --slow)
            slow=yes
            update_on=aarch64,windows
            shift
            ;;
        --update-on)
            [ $# -ge 2 ] || fail "--update-on needs a list of platforms"
            update_on=$2
            shift 2
            ;;
        *) fail "unknown argument $1 (see the comment at the top of $0)" ;;
    esac
done
[ -n "$native" ] || fail "--native PATH is required (see the comment at the top of $0)"
for tool in python3 curl openssl cmp diff sha256sum; do
    command -v "$tool" >/dev/null || fail "$tool is needed and not installed"
done
"$native" --version >/dev/null || fail "$native --version failed"

# On tmpfs where there is one: `export --ranges` writes a million files.
tmp=${TMPDIR:-/tmp}
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
    tmp=/dev/shm
fi
work=$(mktemp -d "$tmp/seekless-platforms.XXXXXX")
# Background processes (servers, curl loops) by process id.
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${pids[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    # The prefix's wineserver, which this script's wine processes started.
    if [ -n "$wineserver_cmd" ]; then
        "$wineserver_cmd" -k 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Inputs ----------------------------------------------------------------------

# Generated corpora, passwords, hashes, exhash operations, block files and a
# directory to make a torrent of; the same bytes on every run.
mkdir -p "$work/inputs"
python3 - "$work/inputs" "$repo" <<'EOF'
import hashlib, json, os, random, sys
out, repo = sys.argv[1], sys.argv[2]
r = random.Random(20261128)

def write(name, text, mode="w"):
    with open(os.path.join(out, name), mode) as f:
        f.write(text)

def count():
    # The long tail of real counts: P(c) = 1/(c(c+1)).
    return int(1 / (1 - r.random()))

sha1 = lambda pw: hashlib.sha1(pw.encode()).hexdigest().upper()
present = {"password": 9545824, "123456": 37359195, "hunter2": 17043,
           "qwerty": 10556095, "pässwörd": 12}
absent = ["correct horse battery staple", "seekless absent 1", "ünïcödé absent"]
lines = [f"{sha1(pw)}:{c}" for pw, c in present.items()]
# Neighbours of "password" in its range 5BAA6, and random hashes.
lines += [f"5BAA6{r.getrandbits(140):035X}:{count()}" for _ in range(3)]
lines += [f"{r.getrandbits(160):040X}:{count()}" for _ in range(2990)]
# A hash listed twice (its counts are summed) and one in lower case.
lines.append(lines[10].split(":")[0] + ":5")
lines.append(f"{r.getrandbits(160):040x}:3")
old = list(lines)
r.shuffle(lines)
write("sha1.txt", "".join(l + "\n" for l in lines))
write("sha1-crlf.txt", "".join(l + "\r\n" for l in lines))
write("sha1-utf16.txt", "\ufeff".encode("utf-16-le") + "".join(l + "\r\n" for l in lines).encode("utf-16-le"), "wb")

# NEW: some removed, some added, some recounted, "password" recounted.
new = [l for i, l in enumerate(old) if i < 8 or i % 20 != 0]
new = [f"{l.split(':')[0]}:{int(l.split(':')[1]) + 1}" if i % 30 == 1 or i == 0 else l
       for i, l in enumerate(new)]
new += [f"{r.getrandbits(160):040X}:{count()}" for _ in range(250)]
r.shuffle(new)
write("sha1-new.txt", "".join(l + "\n" for l in new))

ntlm = ["8846F7EAEE8FB117AD06BDD830B7586C:9545824"]  # "password"
ntlm += [f"{r.getrandbits(128):032X}:{count()}" for _ in range(2500)]
r.shuffle(ntlm)
write("ntlm.txt", "".join(l + "\n" for l in ntlm))

write("passwords.txt", "".join(pw + "\n" for pw in list(present) + absent))
hashes = [l.split(":")[0] for l in old[:6]] + [old[20].split(":")[0].lower()]
hashes += [f"{r.getrandbits(160):040X}" for _ in range(3)]
write("hashes-sha1.txt", "".join(h + "\n" for h in hashes))
hashes = [l.split(":")[0] for l in ntlm[:5]] + [ntlm[7].split(":")[0].lower()]
hashes += [f"{r.getrandbits(128):032X}" for _ in range(3)]
write("hashes-ntlm.txt", "".join(h + "\n" for h in hashes))
# Ranges to ask serve for: "password"'s (changed in NEW), two others, one
# empty, in lower case once.
prefixes = {l[:5] for l in old}
empty = next(p for p in (f"{r.getrandbits(20):05X}" for _ in range(100)) if p not in prefixes)
write("prefixes.txt", "\n".join(["5BAA6", "5baa6", old[40][:5], old[41][:5], empty]) + "\n")

# exhash: puts, overwrites, deletes, gets and commits.
ops, keys = [], []
for i in range(3000):
    x = r.random()
    if x < 0.6 or not keys:
        k = r.getrandbits(64) if r.random() < 0.5 else r.randrange(1000)
        keys.append(k)
        ops.append(f"put {k} {r.getrandbits(64)}")
    elif x < 0.75:
        ops.append(f"del {r.choice(keys)}")
    elif x < 0.97:
        ops.append(f"get {r.choice(keys) if r.random() < 0.8 else r.getrandbits(64)}")
    else:
        ops.append("commit")
write("exhash-ops.txt", "".join(o + "\n" for o in ops))

# Bitcoin Core's 104-block regtest chain as blk*.dat files: records
# (magic, little-endian length, block) in two files, out of order.
text = open(os.path.join(repo, "crates/blocks/tests/data/rpc_getblockstats.json")).read()
blocks = json.loads(text)["blocks"]
os.mkdir(os.path.join(out, "blocks"))
order = list(range(len(blocks)))
for i in range(0, len(order) - 1, 7):
    order[i], order[i + 1] = order[i + 1], order[i]
for n, part in enumerate((order[:60], order[60:])):
    with open(os.path.join(out, "blocks", f"blk{n:05}.dat"), "wb") as f:
        for i in part:
            b = bytes.fromhex(blocks[i])
            f.write(bytes.fromhex("fabfb5da") + len(b).to_bytes(4, "little") + b)

# A directory to make a torrent of.
share = os.path.join(out, "share")
os.makedirs(os.path.join(share, "sub dir"))
for name, size in [("a.bin", 70000), ("b.txt", 1234), ("sub dir/c.bin", 40000), ("empty", 0)]:
    write(os.path.join("share", name), bytes(r.getrandbits(8) for _ in range(size)), "wb")
EOF
cp "$repo"/crates/bencode/tests/data/*.torrent "$work/inputs/"
# A torrent that is not bencode.
printf 'd4:infod4:name1:xe' >"$work/inputs/broken.torrent"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
    -keyout "$work/inputs/key.pem" -out "$work/inputs/cert.pem" 2>/dev/null \
    || fail "openssl could not make a self-signed certificate"
mapfile -t prefixes <"$work/inputs/prefixes.txt"
mapfile -t passwords <"$work/inputs/passwords.txt"

# Platforms -------------------------------------------------------------------

plat=         # the platform being checked: aarch64 or windows
N=            # its native side's directory
E=            # its emulated side's directory
out=          # where both sides' outputs go
failures=0    # checks failed on this platform
total_failed=0
skipped=0
summary=()
win_exe=

# emulate ARGS...: seekless ARGS on the platform being checked, with the
# command in emu_cmd (the emulator and the binary).
emu_cmd=()
emulate() {
    "${emu_cmd[@]}" "$@"
}

# seek SIDE ARGS...: seekless ARGS on SIDE (native or emu), in its directory.
seek() {
    local side=$1
    shift
    if [ "$side" = native ]; then
        (cd "$N" && "$native" "$@")
    else
        (cd "$E" && emulate "$@")
    fi
}

# run SIDE NAME ARGS...: seekless ARGS on SIDE, standard input from $stdin
# (default: none); its stdout, stderr and status into $out/SIDE/NAME.*.
stdin=
run() {
    local side=$1 name=$2 code=0
    shift 2
    seek "$side" "$@" <"${stdin:-/dev/null}" >"$out/$side/$name.out" 2>"$out/$side/$name.err" || code=$?
    echo "$code" >"$out/$side/$name.rc"
}

# section TITLE: a heading, with the seconds the platform has taken so far.
section() {
    echo "== $plat: $* (at $((SECONDS - start)) s)"
}

pass() {
    say "$plat: ok      $*"
}
# failed WHAT DETAIL: a failed check; DETAIL is printed indented.
failed() {
    say "$plat: FAILED  $1" >&2
    [ -z "${2:-}" ] || head -n 30 <<<"$2" | sed 's/^/      /' >&2
    summary+=("$plat: FAILED  $1")
    failures=$((failures + 1))
}

# A file's bytes shown for a report: printable, at most 30 lines.
show() { cat -A "$1" 2>/dev/null | head -n 30; }

# same NAME [WHAT]: the two sides' stdout and status for NAME are equal:
# stdout but for durations and rates (the summaries prepare, export, diff
# and update print end with them), and with $slashes set, Windows' path
# separator (a file in a directory given on the command line is DIR\FILE
# there).
slashes=
timing='s/[0-9]+(\.[0-9]+)? s([ ,)]|$)/T s\2/g; s/\([0-9.]+ [A-Za-z]+\/s\)/(RATE)/g'
same() {
    local name=$1 what=${2:-$1} a=$out/native/$1 b=$out/emu/$1
    sed -E "$timing" "$a.out" >"$a.masked"
    if [ -n "$slashes" ] && [ "$plat" = windows ]; then
        sed -E "$timing" "$b.out" | tr "\\\\" / >"$b.masked"
    else
        sed -E "$timing" "$b.out" >"$b.masked"
    fi
    if [ "$(cat "$a.rc")" != "$(cat "$b.rc")" ]; then
        failed "$what: exit status $(cat "$b.rc"), natively $(cat "$a.rc")" \
            "$(printf 'stderr: %s\nnative stderr: %s' "$(head -c 2000 "$b.err")" "$(head -c 2000 "$a.err")")"
    elif ! cmp -s "$a.masked" "$b.masked"; then
        failed "$what: output differs from the native one's" \
            "$(diff <(cat -A "$a.masked") <(cat -A "$b.masked") | head -n 20; head -c 1000 "$b.err")"
    else
        pass "$what (status $(cat "$b.rc"), $(wc -c <"$b.out") bytes of output)"
    fi
}

# both NAME ARGS...: seekless ARGS on both sides, then `same NAME`.
both() {
    local name=$1
    shift
    run native "$name" "$@"
    run emu "$name" "$@"
    same "$name" "${what:-$name: seekless $*}"
}

# same_file PATH [WHAT]: the file (or directory tree) PATH, relative to each
# side's directory, has the same bytes on both.
same_file() {
    local path=$1 what=${2:-$1}
    if [ ! -e "$E/$path" ]; then
        failed "$what: $path was not written"
    elif [ ! -e "$N/$path" ]; then
        failed "$what: the native side wrote no $path"
    elif [ -d "$N/$path" ]; then
        if diff -r -q "$N/$path" "$E/$path" >"$out/diff" 2>&1; then
            pass "$what: $(find "$E/$path" -type f | wc -l) files, the same bytes as native"
        else
            failed "$what: differs from the native tree" "$(head -n 10 "$out/diff")"
        fi
    elif cmp -s "$N/$path" "$E/$path"; then
        pass "$what: $(wc -c <"$E/$path") bytes, the same as native"
    else
        failed "$what: differs from the native file" "$(cmp "$N/$path" "$E/$path" 2>&1 | head -n 3)"
    fi
}

# listing DIR: every file under DIR with its size and digest, hidden too.
listing() {
    (cd "$1" && find . -type f -exec sha256sum {} + | sort -k 2)
}

# refused NAME FILE ARGS...: seekless ARGS must exit 2 on both sides, the
# emulated one with one line on stderr naming FILE, and leave its
# directory's files as they were.
refused() {
    local name=$1 name_in_error=$2 before
    shift 2
    before=$(listing "$E")
    run native "$name" "$@"
    run emu "$name" "$@"
    local code lines
    code=$(cat "$out/emu/$name.rc")
    lines=$(wc -l <"$out/emu/$name.err")
    if [ "$code" != 2 ] || [ "$(cat "$out/native/$name.rc")" != 2 ]; then
        failed "$name: seekless $*: exit status $code (natively $(cat "$out/native/$name.rc")), not 2" "$(head -c 1000 "$out/emu/$name.err")"
    elif [ "$lines" != 1 ] || ! grep -qF "$name_in_error" "$out/emu/$name.err"; then
        failed "$name: seekless $*: stderr is not one line naming $name_in_error" "$(show "$out/emu/$name.err")"
    elif [ "$(listing "$E")" != "$before" ]; then
        failed "$name: seekless $*: the directory's files changed" "$(diff <(echo "$before") <(listing "$E"))"
    else
        pass "$name: refused with exit 2, '$(cat "$out/emu/$name.err")', nothing left behind"
    fi
}

# same_updated FILE WHAT: FILE, an index `update --base-url` wrote on each
# side, has the same bytes but for the time the update finished: the 8
# bytes in the source section, and the header checksums that cover it
# (bytes 52..56, 60..64).
same_updated() {
    local report
    if report=$(python3 - "$N/$1" "$E/$1" <<'EOF'
import struct, sys
a, b = (bytearray(open(p, "rb").read()) for p in sys.argv[1:])
if len(a) != len(b):
    sys.exit(f"{len(b)} bytes, natively {len(a)}")
pages = struct.unpack_from("<Q", a, 24)[0]
source = 4096 * (1 + pages) + 12 * pages + 4 * ((pages + 340) // 341)
time = source + 2 + struct.unpack_from("<H", a, source)[0]
mask = set(range(52, 56)) | set(range(60, 64)) | set(range(time, time + 8))
diff = [i for i in range(len(a)) if a[i] != b[i] and i not in mask]
if diff:
    sys.exit(f"{len(diff)} bytes differ, the first at offset {diff[0]}")
print(f"{len(a)} bytes, equal but for the update time (offset {time})")
EOF
    ); then
        pass "$2: $report"
    else
        failed "$2" "$report"
    fi
}

# serve_start SIDE NAME ARGS...: `seekless pwned serve ARGS` on SIDE in the
# background; sets http and https to the base URLs it announced (https
# empty without --tls-listen) and server to its process id.
server=
http=
https=
serve_start() {
    local side=$1 name=$2 line
    shift 2
    : >"$out/$side/$name.out"
    # exec: the process id is the server's (qemu's, Wine's).
    if [ "$side" = native ]; then
        (cd "$N" && exec "$native" pwned serve "$@") >"$out/$side/$name.out" 2>"$out/$side/$name.err" &
    else
        (cd "$E" && exec "${emu_cmd[@]}" pwned serve "$@") >"$out/$side/$name.out" 2>"$out/$side/$name.err" &
    fi
    server=$!
    pids+=("$server")
    http=
    https=
    for _ in $(seq 300); do
        while read -r line; do
            case "$line" in
                "listening on http://"*) http=${line#listening on } ;;
                "listening on https://"*) https=${line#listening on } ;;
            esac
        done <"$out/$side/$name.out"
        if [ -n "$http" ] && { [ -n "$https" ] || ! grep -q -- --tls-listen <<<"$*"; }; then
            break
        fi
        kill -0 "$server" 2>/dev/null || break
        sleep 0.1
    done
    # Ready when /health says 200 (the index verified).
    for _ in $(seq 300); do
        [ -n "$http" ] || break
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$http/health")" = 200 ] && return 0
        sleep 0.1
    done
    return 1
}

# serve_stop: stops the server serve_start started.
serve_stop() {
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
}

# ask SIDE NAME BASE ARGS...: a GET (or whatever ARGS make it) of
# BASE/PATH with curl; what it got into $out/SIDE/NAME.out: the status, the
# headers that do not depend on the time, and the body.
ask() {
    local side=$1 name=$2 url=$3
    shift 3
    local o=$out/$side/$name
    curl -s --cacert "$work/inputs/cert.pem" -D "$o.headers" -o "$o.body" -w '%{http_code} %{http_version}\n' \
        "$@" "$url" >"$o.out" 2>"$o.err" || echo "curl failed: $?" >>"$o.out"
    grep -i -E '^(content-type|content-encoding|etag|last-modified|cache-control|access-control-allow-origin|vary):' \
        "$o.headers" | tr -d '\r' | sort >>"$o.out" || true
    [ ! -e "$o.body" ] || cat "$o.body" >>"$o.out"
    echo 0 >"$o.rc"
}

# Setup of each platform --------------------------------------------------------

# setup_windows: the Wine command, the prefix, seekless.exe in $work with
# the stand-in DLL when needed. Sets reason and returns 1 when Windows
# cannot be checked here.
setup_windows() {
    wine_setup "$repo/${CARGO_TARGET_DIR:-target}/check-platforms/wine-prefix" || return 1
    mkdir -p "$work/wine-bin"
    win_exe=$work/wine-bin/seekless.exe
    cp "$windows" "$win_exe"
    wine_prng "$win_exe" "$work/wine-bin"
}

# Checks ----------------------------------------------------------------------

check_platform() {
    local side name kind corpus prefix i
    N=$work/$plat/native
    E=$work/$plat/emu
    out=$work/$plat/out
    mkdir -p "$N" "$E" "$out/native" "$out/emu"
    cp -r "$work/inputs/." "$N/"
    cp -r "$work/inputs/." "$E/"

    run emu version --version
    if [ "$(cat "$out/emu/version.rc")" != 0 ]; then
        failed "seekless --version does not run (status $(cat "$out/emu/version.rc"))" "$(show "$out/emu/version.err")"
        return
    fi
    pass "runs: $(cat "$out/emu/version.out")"

    section "1. the built-in sample"
    stdin=$work/inputs/passwords.txt
    both sample-stdin pwned check
    if cmp -s "$out/native/sample-stdin.err" "$out/emu/sample-stdin.err"; then
        pass "sample-stdin: the same note on stderr"
    else
        failed "sample-stdin: stderr differs" "$(diff "$out/native/sample-stdin.err" "$out/emu/sample-stdin.err")"
    fi
    stdin=
    (cd "$N" && echo password | "$native" pwned check) >"$out/native/sample.out" 2>/dev/null \
        && echo 0 >"$out/native/sample.rc" || echo $? >"$out/native/sample.rc"
    (cd "$E" && echo password | emulate pwned check) >"$out/emu/sample.out" 2>"$out/emu/sample.err" \
        && echo 0 >"$out/emu/sample.rc" || echo $? >"$out/emu/sample.rc"
    same sample "echo password | seekless pwned check"
    both sample-args pwned check "${passwords[@]}"

    section "2. prepare, check, export, stats, verify"
    # prepare prints how long it took.
    local corpora=(sha1 ntlm)
    [ "$plat" = windows ] && corpora+=(sha1-crlf sha1-utf16)
    for corpus in "${corpora[@]}"; do
        both "prepare-$corpus" pwned prepare "$corpus.txt" -o "$corpus.idx"
        same_file "$corpus.idx" "prepare $corpus.txt: the index"
        case "$corpus" in
            sha1-*)
                if cmp -s "$N/sha1.idx" "$E/$corpus.idx"; then
                    pass "$corpus.idx is the index of the LF corpus, byte for byte"
                else
                    failed "$corpus.idx differs from sha1.idx (the same corpus with LF line ends)"
                fi
                ;;
        esac
    done
    for kind in sha1 ntlm; do
        both "check-$kind" pwned check -i "$kind.idx" "${passwords[@]}"
        stdin=$work/inputs/passwords.txt
        both "check-$kind-stdin" pwned check -i "$kind.idx" --json
        stdin=$work/inputs/hashes-$kind.txt
        both "check-$kind-hashes" pwned check -i "$kind.idx" --hashes
        stdin=
        both "export-$kind" pwned export "$kind.idx"
        both "export-$kind-file" pwned export "$kind.idx" -o "$kind-export.txt" --crlf
        same_file "$kind-export.txt" "export $kind.idx -o $kind-export.txt --crlf"
        both "stats-$kind" pwned stats "$kind.idx"
        both "verify-$kind" pwned verify "$kind.idx"
    done
    # gzip-ranges prints how long it took.
    both gzip-ranges pwned gzip-ranges sha1.idx
    same_file sha1.idx.gz-ranges "gzip-ranges sha1.idx: the file"
    both verify-gzip-ranges pwned verify sha1.idx
    if [ "$plat" != windows ] || [ -n "$slow" ]; then
        both export-ranges pwned export sha1.idx --ranges ranges
        same_file ranges "export sha1.idx --ranges ranges"
        rm -rf "$N/ranges" "$E/ranges"
    else
        say "$plat: SKIPPED export --ranges: a million files take Wine over half an hour (12,000-30,000 a minute here); --slow runs it"
        summary+=("$plat: SKIPPED export --ranges (Wine: 12,000-30,000 files a minute; --slow runs it)")
    fi

    section "3. indexes and bundles from the other side"
    for kind in sha1 ntlm; do
        cp "$E/$kind.idx" "$N/other-$kind.idx"
        cp "$N/$kind.idx" "$E/other-$kind.idx"
        both "other-verify-$kind" pwned verify "other-$kind.idx"
        both "other-check-$kind" pwned check -i "other-$kind.idx" "${passwords[@]}"
        both "other-export-$kind" pwned export "other-$kind.idx"
    done

    section "4. delta bundles"
    both prepare-new pwned prepare sha1-new.txt -o sha1-new.idx
    same_file sha1-new.idx "prepare sha1-new.txt: the index"
    both diff pwned diff sha1.idx sha1-new.idx -o changes.bundle
    same_file changes.bundle "diff sha1.idx sha1-new.idx -o changes.bundle: the bundle"
    # Each side applies the other's bundle, to a copy of its own index.
    cp "$N/changes.bundle" "$E/other.bundle"
    cp "$E/changes.bundle" "$N/other.bundle"
    cp "$N/sha1.idx" "$N/applied.idx"
    cp "$E/sha1.idx" "$E/applied.idx"
    both apply pwned update applied.idx --from-bundle other.bundle
    same_file applied.idx "update applied.idx --from-bundle (the other side's bundle): the index"
    both apply-verify pwned verify applied.idx
    both apply-export pwned export applied.idx
    if cmp -s "$out/emu/apply-export.out" "$out/emu/export-sha1.out"; then
        failed "the applied bundle changed nothing"
    fi

    # Refusals: exit 2, one line naming the file, nothing left behind.
    python3 - "$E/changes.bundle" "$E/damaged.bundle" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[len(b) // 2] ^= 0x10
open(sys.argv[2], "wb").write(b)
EOF
    cp "$E/damaged.bundle" "$N/damaged.bundle"
    for side in "$N" "$E"; do
        cp "$side/sha1.idx" "$side/target.idx"
        head -c -4096 "$side/sha1.idx" >"$side/truncated.idx"
    done
    refused refuse-damaged damaged.bundle pwned update target.idx --from-bundle damaged.bundle
    refused refuse-truncated truncated.idx pwned update truncated.idx --from-bundle other.bundle
    refused refuse-missing-bundle missing.bundle pwned update target.idx --from-bundle missing.bundle
    refused refuse-missing-index missing.idx pwned update no-dir/missing.idx --from-bundle other.bundle
    refused refuse-check-missing missing.idx pwned check -i missing.idx password
    refused refuse-check-truncated truncated.idx pwned check -i truncated.idx password
    both verify-truncated pwned verify truncated.idx

    section "5. update --base-url from a native serve"
    if [[ ",$update_on," == *",$plat,"* ]]; then
        cp "$N/sha1-new.idx" "$N/upstream.idx"
        if ! serve_start native upstream --listen 127.0.0.1:0 -i upstream.idx; then
            failed "native serve of upstream.idx did not start" "$(show "$out/native/upstream.err")"
        fi
        upstream=$http
        # --concurrency 16: under Wine 8.0 the default 256 stalled
        # halfway (no progress for minutes); 16 goes through.
        both update-base-url pwned update mirror.idx --base-url "$upstream" --concurrency 16
        same_updated mirror.idx "update mirror.idx --base-url $upstream (all 1,048,576 ranges): the index"
        both update-base-url-stats pwned stats mirror.idx
        serve_stop
    else
        say "$plat: SKIPPED update --base-url: it asks for all 1,048,576 ranges (measured here: 35-99 s natively, 150-250 s under qemu, 270-460 s under Wine at --concurrency 16); --slow or --update-on $plat runs it"
        summary+=("$plat: SKIPPED update --base-url (1,048,576 requests; --slow or --update-on $plat runs it)")
    fi

    section "6. serve over HTTP and HTTPS"
    for side in "$N" "$E"; do
        touch -d '2026-01-02 03:04:05Z' "$side/sha1.idx" "$side/ntlm.idx"
    done
    local urls=() servers=()
    for side in native emu; do
        if ! serve_start "$side" serve -i sha1.idx -i ntlm.idx --listen 127.0.0.1:0 \
            --tls-listen 127.0.0.1:0 --tls-cert cert.pem --tls-key key.pem; then
            failed "$side serve did not become healthy" "$(show "$out/$side/serve.err")"
        fi
        urls+=("$http" "$https")
        servers+=("$server")
    done
    local n_http=${urls[0]} n_https=${urls[1]} e_http=${urls[2]} e_https=${urls[3]}
    local proto base_n base_e etag
    for proto in http https; do
        if [ "$proto" = http ]; then base_n=$n_http base_e=$e_http; else base_n=$n_https base_e=$e_https; fi
        i=0
        for prefix in "${prefixes[@]}"; do
            i=$((i + 1))
            ask native "$proto-range-$i" "$base_n/range/$prefix"
            ask emu "$proto-range-$i" "$base_e/range/$prefix"
            same "$proto-range-$i" "$proto GET /range/$prefix"
        done
        for side in native emu; do
            [ $side = native ] && base=$base_n || base=$base_e
            ask $side "$proto-ntlm" "$base/range/8846F?mode=ntlm"
            ask $side "$proto-gzip" "$base/range/5BAA6" -H 'Accept-Encoding: gzip'
            ask $side "$proto-br" "$base/range/5BAA6" -H 'Accept-Encoding: br'
            etag=$(grep -i '^etag:' "$out/$side/$proto-range-1.headers" | cut -d' ' -f2 | tr -d '\r')
            ask $side "$proto-304" "$base/range/5BAA6" -H "If-None-Match: $etag"
            ask $side "$proto-bad" "$base/range/5BAG6"
            ask $side "$proto-404" "$base/nothing"
            ask $side "$proto-check" "$base/check/sha1/5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8"
            ask $side "$proto-post" "$base/check" \
                -d '["5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8","8846F7EAEE8FB117AD06BDD830B7586C","00"]'
            ask $side "$proto-health" "$base/health"
            # The first four fields (kind, file, hashes, state); not the
            # times.
            cut -f1-4 "$out/$side/$proto-health.out" >"$out/$side/$proto-health.cut"
            mv "$out/$side/$proto-health.cut" "$out/$side/$proto-health.out"
            ask $side "$proto-padding" "$base/range/5BAA6" -H 'Add-Padding: true'
        done
        same "$proto-ntlm" "$proto GET /range/8846F?mode=ntlm"
        same "$proto-gzip" "$proto GET /range/5BAA6, gzip"
        same "$proto-br" "$proto GET /range/5BAA6, brotli"
        same "$proto-304" "$proto GET /range/5BAA6, If-None-Match"
        same "$proto-bad" "$proto GET /range/5BAG6 (400)"
        same "$proto-404" "$proto GET /nothing (404)"
        same "$proto-check" "$proto GET /check/sha1/…"
        same "$proto-post" "$proto POST /check"
        same "$proto-health" "$proto GET /health (kind, file, hashes, state)"
        # Padding is random: the same status and real lines.
        for side in native emu; do
            head -n1 "$out/$side/$proto-padding.out" >"$out/$side/$proto-padding.status"
            tr -d '\r' <"$out/$side/$proto-padding.body" | grep -v ':0$' >"$out/$side/$proto-padding.real" || true
            cat "$out/$side/$proto-padding.status" "$out/$side/$proto-padding.real" >"$out/$side/$proto-padding.out"
        done
        same "$proto-padding" "$proto GET /range/5BAA6, Add-Padding (status and real lines)"
    done
    for server in "${servers[@]}"; do
        serve_stop
    done

    section "7. the served index replaced"
    # The answers before and after, from native serves of both indexes.
    serve_start native new-serve -i sha1-new.idx --listen 127.0.0.1:0 || true
    ask native new-range "$http/range/5BAA6"
    serve_stop
    local old_answer new_answer
    old_answer=$(sha256sum <"$out/native/http-range-1.body")
    new_answer=$(sha256sum <"$out/native/new-range.body")
    cp "$E/sha1.idx" "$E/live.idx"
    if ! serve_start emu live-serve -i live.idx --listen 127.0.0.1:0; then
        failed "emulated serve of live.idx did not become healthy" "$(show "$out/emu/live-serve.err")"
    else
        local loop_log=$out/emu/loop.log stop=$out/emu/loop.stop
        : >"$loop_log"
        (
            while [ ! -e "$stop" ]; do
                code=$(curl -s -o "$out/emu/loop.body" -w '%{http_code}' --max-time 10 "$http/range/5BAA6" || echo "curl $?")
                echo "$code $(sha256sum <"$out/emu/loop.body" | cut -c1-16)" >>"$loop_log"
            done
        ) &
        local loop=$!
        pids+=("$loop")
        sleep 1
        local step switch_to
        for step in bundle prepare; do
            if [ "$step" = bundle ]; then
                run emu "live-$step" pwned update live.idx --from-bundle other.bundle
                switch_to=${new_answer%% *}
            else
                run emu "live-$step" pwned prepare sha1.txt -o live.idx
                switch_to=${old_answer%% *}
            fi
            if [ "$(cat "$out/emu/live-$step.rc")" != 0 ]; then
                failed "live: seekless pwned ${step/bundle/update live.idx --from-bundle} while served: status $(cat "$out/emu/live-$step.rc")" \
                    "$(show "$out/emu/live-$step.err")"
                continue
            fi
            local switched=
            for _ in $(seq 150); do
                if [ "$(tail -n1 "$loop_log" | cut -d' ' -f2)" = "${switch_to:0:16}" ]; then
                    switched=yes
                    break
                fi
                sleep 0.1
            done
            # Where Windows refuses to rename over a mapped file, the old
            # one is renamed aside first (docs/windows.md).
            local aside
            aside=$(cd "$E" && find . -maxdepth 1 -name '.live.idx.seekless-old-*' | wc -l)
            if [ -n "$switched" ]; then
                pass "live: after $step, serve answers from the new file ($(wc -l <"$loop_log") requests so far; $aside old files renamed aside)"
            else
                failed "live: after $step, serve still answers the old range 15 s later" \
                    "$(tail -n 3 "$loop_log"; show "$out/emu/live-serve.err")"
            fi
            sleep 1
        done
        touch "$stop"
        wait "$loop" || true
        local bad
        bad=$(grep -v '^200 ' "$loop_log" | sort | uniq -c || true)
        if [ -n "$bad" ]; then
            failed "live: requests failed during the switches" "$bad"
        else
            pass "live: all $(wc -l <"$loop_log") requests during the two switches answered 200"
        fi
        local others
        others=$(cut -d' ' -f2 "$loop_log" | sort -u | grep -v -e "^${old_answer:0:16}" -e "^${new_answer:0:16}" || true)
        [ -z "$others" ] || failed "live: answers that are neither the old nor the new range" "$others"
        serve_stop
        # Under Windows, the file renamed aside is deleted once serve lets
        # go of it (docs/windows.md): say what is left.
        local leftovers
        leftovers=$(cd "$E" && find . -maxdepth 1 \( -name '.live*' -o -name '.seekless-index-*' \) -printf '%P ')
        [ -z "$leftovers" ] || say "$plat: note: beside live.idx after serve stopped: $leftovers"
    fi

    if [ "$plat" = windows ]; then
        section "8. drive letters, backslashes and spaces"
        local dir="$E/dir with space" wdir
        mkdir -p "$dir"
        cp "$E/sha1.txt" "$E/other.bundle" "$dir/"
        wdir=$(winpath "$dir")
        run emu win-prepare pwned prepare "$wdir\\sha1.txt" -o "$wdir\\pwned.idx"
        if [ "$(cat "$out/emu/win-prepare.rc")" = 0 ] && cmp -s "$dir/pwned.idx" "$N/sha1.idx"; then
            pass "prepare '$wdir\\sha1.txt' -o '$wdir\\pwned.idx': the native index's bytes"
        else
            failed "prepare '$wdir\\sha1.txt' -o '$wdir\\pwned.idx' (status $(cat "$out/emu/win-prepare.rc"))" \
                "$(show "$out/emu/win-prepare.err"; ls -la "$dir")"
        fi
        run emu win-check pwned check -i "$wdir\\pwned.idx" "${passwords[@]}"
        cp "$out/native/check-sha1.out" "$out/native/win-check.out"
        cp "$out/native/check-sha1.rc" "$out/native/win-check.rc"
        same win-check "check -i '$wdir\\pwned.idx'"
        run emu win-apply pwned update "$wdir\\pwned.idx" --from-bundle "$wdir\\other.bundle"
        if [ "$(cat "$out/emu/win-apply.rc")" = 0 ] && cmp -s "$dir/pwned.idx" "$N/applied.idx"; then
            pass "update '$wdir\\pwned.idx' --from-bundle '$wdir\\other.bundle': the native result's bytes"
        else
            failed "update '$wdir\\pwned.idx' --from-bundle '$wdir\\other.bundle' (status $(cat "$out/emu/win-apply.rc"))" \
                "$(show "$out/emu/win-apply.err"; ls -la "$dir")"
        fi
        run emu win-verify pwned verify "$wdir\\pwned.idx"
        if [ "$(cat "$out/emu/win-verify.rc")" = 0 ] && grep -qF "$wdir\\pwned.idx: ok" "$out/emu/win-verify.out"; then
            pass "verify '$wdir\\pwned.idx': $(cat "$out/emu/win-verify.out")"
        else
            failed "verify '$wdir\\pwned.idx' (status $(cat "$out/emu/win-verify.rc"))" \
                "$(show "$out/emu/win-verify.out"; show "$out/emu/win-verify.err")"
        fi
        # Forward slashes, and a relative path with backslashes.
        run emu win-check-slashes pwned check -i "${wdir//\\//}/pwned.idx" password
        run emu win-check-relative pwned check -i 'dir with space\pwned.idx' password
        if [ "$(cat "$out/emu/win-check-slashes.out")" = "$(cat "$out/emu/win-check-relative.out")" ] \
            && grep -q . "$out/emu/win-check-slashes.out" && [ "$(cat "$out/emu/win-check-slashes.rc")" = 0 ]; then
            pass "check -i with forward slashes, and with a relative path with a backslash: $(cat "$out/emu/win-check-slashes.out")"
        else
            failed "check -i with forward slashes or a relative path" \
                "$(show "$out/emu/win-check-slashes.err"; show "$out/emu/win-check-relative.err")"
        fi
    fi

    section "9. bencode, torrent, blocks, exhash"
    both bencode-check bencode check base-v1.torrent base-v2.torrent many-pad-files.torrent \
        sample.torrent v2_hybrid.torrent v2_multiple_files.torrent broken.torrent
    both bencode-dump bencode dump sample.torrent
    cp "$out/native/bencode-dump.out" "$N/sample.json"
    cp "$out/native/bencode-dump.out" "$E/sample.json"
    both bencode-encode bencode encode sample.json -o sample-again.torrent
    same_file sample-again.torrent "bencode encode (the dump of sample.torrent)"
    cmp -s "$E/sample-again.torrent" "$E/sample.torrent" \
        || failed "bencode dump | encode did not give sample.torrent back"
    both torrent-info torrent info sample.torrent
    both torrent-info-json torrent info v2_hybrid.torrent --json
    both torrent-create torrent create share -o share.torrent -d --piece-length 16K --tracker http://127.0.0.1:1/announce
    same_file share.torrent "torrent create share: the .torrent"
    both torrent-verify torrent verify share.torrent .
    printf 'X' | dd of="$E/share/a.bin" bs=1 seek=20000 conv=notrunc status=none
    printf 'X' | dd of="$N/share/a.bin" bs=1 seek=20000 conv=notrunc status=none
    both torrent-verify-bad torrent verify share.torrent .
    both blocks-scan blocks scan blocks
    both blocks-scan-json blocks scan blocks --json --verify
    slashes=yes both blocks-list blocks list blocks
    both blocks-linearize blocks linearize blocks -o linear
    same_file linear "blocks linearize blocks -o linear"
    stdin=$work/inputs/exhash-ops.txt
    both exhash-apply exhash apply table.db
    stdin=
    same_file table.db "exhash apply: the table file"
    printf 'get 1\nput 1 2\nget 1\n' >"$work/inputs/exhash-more.txt"
    stdin=$work/inputs/exhash-more.txt
    both exhash-reopen exhash apply table.db
    stdin=
    same_file table.db "exhash apply again: the table file"
    run native exhash-bench exhash bench --keys 20000 --pattern sequential --json
    run emu exhash-bench exhash bench --keys 20000 --pattern sequential --json
    local fields
    for side in native emu; do
        python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
print(json.dumps({k: x for k, x in v.items() if not any(t in k for t in ("ns", "secs", "seconds", "time", "ms"))}, sort_keys=True))
' "$out/$side/exhash-bench.out" >"$out/$side/exhash-bench.fields" 2>&1 || true
    done
    fields=$(cat "$out/emu/exhash-bench.fields")
    mv "$out/native/exhash-bench.fields" "$out/native/exhash-bench.out"
    mv "$out/emu/exhash-bench.fields" "$out/emu/exhash-bench.out"
    same exhash-bench "exhash bench --keys 20000 --json, all but the times: $fields"
}

# winpath PATH: the Windows name Wine gives an absolute path (drive Z: is /).
winpath() {
    local path=${1//\//\\}
    echo "Z:$path"
}

# Main --------------------------------------------------------------------------

times=()
for plat in aarch64 windows; do
    binary=${!plat}
    echo "== $plat"
    if [ -z "$binary" ]; then
        say "$plat: SKIPPED: no --$plat binary given"
        summary+=("$plat: SKIPPED (no --$plat binary given)")
        continue
    fi
    reason=
    if [ "$plat" = aarch64 ]; then
        emu_cmd=(qemu-aarch64-static "$aarch64")
        command -v qemu-aarch64-static >/dev/null \
            || reason="qemu-aarch64-static is not installed (Debian: apt-get install qemu-user-static)"
    elif setup_windows; then
        # LC_ALL: Wine turns arguments into UTF-16 by the locale.
        emu_cmd=(env LC_ALL=C.UTF-8 "$wine" "$win_exe")
    fi
    if [ -n "$reason" ]; then
        say "$plat: SKIPPED: $reason"
        summary+=("$plat: SKIPPED ($reason)")
        skipped=$((skipped + 1))
        continue
    fi
    start=$SECONDS
    failures=0
    check_platform
    times+=("$plat: $((SECONDS - start)) s, $failures failed")
    total_failed=$((total_failed + failures))
done

echo "== summary"
# What failed or was skipped (every check passed is said above).
[ ${#summary[@]} -eq 0 ] || printf '%s\n' "${summary[@]}"
for t in "${times[@]}"; do
    say "$t"
done
if [ "$total_failed" -gt 0 ]; then
    say "$total_failed checks FAILED"
    exit 1
fi
if [ "$skipped" -gt 0 ]; then
    say "no check failed, but $skipped platforms given were skipped"
    exit 3
fi
say "every platform given passed"
