#!/usr/bin/env bash
# Builds the release artifacts for the three platforms seekless ships for,
# each checked before it is packed, and the Python wheels beside them:
#
#   scripts/release.sh [--targets LIST] [--no-wheels]
#
#   --targets LIST  a comma-separated subset of the targets below (default:
#                   all three)
#   --no-wheels     the binaries only
#
# Targets, and what builds them:
#   x86_64-unknown-linux-musl   static; cargo with musl-gcc (Debian's
#                               musl-tools, or CC_x86_64_unknown_linux_musl)
#   aarch64-unknown-linux-musl  static; cargo-zigbuild with ziglang (PyPI)
#   x86_64-pc-windows-gnu       seekless.exe; cargo with MinGW-w64 (Debian's
#                               gcc-mingw-w64-x86-64)
# Wheels (maturin, PyPI; abi3: one wheel for CPython 3.11 and later):
#   manylinux2014 x86_64 and aarch64 (maturin --zig), win_amd64.
#
# 1. builds `seekless` for each target (release profile), its debug
#    information dropped by the linker (symbols stay, so backtraces name
#    functions): the release profile keeps line tables for profiles and
#    backtraces of local builds (43 MB); what ships is under 12 MB;
# 2. checks each binary: the Linux ones are static (no program interpreter,
#    no shared library) for the right machine; the Windows one is a PE32+
#    x86-64 executable importing system DLLs only (no MinGW runtime DLL);
# 3. runs the x86_64 binary: `pwned check` against the built-in sample,
#    then `pwned prepare` of a few lines and `pwned serve` on them on
#    127.0.0.1 (an ephemeral port), asked for /health and /range/5BAA6 with
#    curl and with `pwned probe`, then stopped with SIGTERM (it must exit
#    0). The other two run under emulation in scripts/check-platforms.sh;
# 4. writes, in target/release-artifacts/:
#      seekless-VERSION-x86_64-linux-musl.tar.gz
#      seekless-VERSION-aarch64-linux-musl.tar.gz
#        (the binary, README.md, docs/, deploy/: the Containerfile and the
#        systemd units; the unpacked directory stays beside it: it is the
#        Containerfile's build context)
#      seekless-VERSION-x86_64-windows-gnu.zip
#        (seekless.exe, README.md, docs/; unpacked beside it too)
#      seekless-VERSION-cp311-abi3-*.whl (one per wheel platform)
#      SHA256SUMS over all of them.
#    Archives are dated by the last commit, owned by root and sorted by
#    name, so that the same tree gives the same bytes.
#
# Needs: rustup (it adds the targets' standard libraries), curl, readelf
# and objdump (binutils), tar, gzip, sha256sum, python3; the C
# compilers above (the C parts of ring and libdeflate). cargo-zigbuild,
# ziglang and maturin are taken from PATH, or installed (pinned) into a
# virtual environment under the target directory.
#
# Exit status: 0 when every artifact asked for is written; 3 when a target's
# toolchain cannot be had (nothing was built; every missing piece is
# named, and CI skips, saying so); 1 when anything else fails.
set -Eeuo pipefail
trap 'echo "release: failed (line $LINENO: $BASH_COMMAND)" >&2; exit 1' ERR
cd "$(dirname "$0")/.."

ALL_TARGETS=x86_64-unknown-linux-musl,aarch64-unknown-linux-musl,x86_64-pc-windows-gnu
# The tools from PyPI, at the versions this script was checked with.
ZIGLANG=ziglang==0.17.1
ZIGBUILD=cargo-zigbuild==0.24.1
MATURIN=maturin==1.16.0
NO_TOOLCHAIN=3

say() { echo "release: $*"; }
fail() {
    echo "release: $*" >&2
    exit 1
}

targets=$ALL_TARGETS
wheels=yes
while [ $# -gt 0 ]; do
    case "$1" in
        --targets)
            [ $# -ge 2 ] || fail "--targets needs a list"
            targets=$2
            shift 2
            ;;
        --no-wheels)
            wheels=
            shift
            ;;
        *) fail "unknown argument $1 (see the comment at the top of $0)" ;;
    esac
done
IFS=, read -ra targets <<<"$targets"
for target in "${targets[@]}"; do
    case ",$ALL_TARGETS," in
        *",$target,"*) ;;
        *) fail "unknown target $target (one of $ALL_TARGETS)" ;;
    esac
done
wants() {
    local target
    for target in "${targets[@]}"; do
        [ "$target" = "$1" ] && return 0
    done
    return 1
}

for tool in cargo curl readelf objdump tar gzip sha256sum python3; do
    command -v "$tool" >/dev/null || fail "$tool is needed and not installed"
done

metadata=$(cargo metadata --format-version 1 --no-deps --locked)
version=$(grep -o '"name":"seekless","version":"[^"]*"' <<<"$metadata" | sed 's/.*"version":"//; s/"$//')
target_dir=$(grep -o '"target_directory":"[^"]*"' <<<"$metadata" | sed 's/.*:"//; s/"$//')
if [ -z "$version" ] || [ -z "$target_dir" ]; then
    fail "cargo metadata: no version or target directory"
fi

# Toolchains ------------------------------------------------------------------

missing=()

# The target's standard library, added with rustup when missing.
std_for() {
    local target=$1 sysroot
    sysroot=$(rustc --print sysroot)
    [ -d "$sysroot/lib/rustlib/$target" ] && return 0
    if ! command -v rustup >/dev/null; then
        missing+=("the $target standard library (no rustup to add it)")
        return 1
    fi
    say "adding the $target target (rustup)"
    rustup target add "$target" >/dev/null 2>&1 || {
        missing+=("the $target standard library (rustup target add $target failed)")
        return 1
    }
}

# The PyPI tools, from PATH or a virtual environment of pinned versions.
tools_venv="$target_dir/release-tools"
pypi_tools() {
    if command -v cargo-zigbuild >/dev/null && command -v maturin >/dev/null \
        && python3 -c 'import ziglang' 2>/dev/null; then
        return 0
    fi
    if [ ! -x "$tools_venv/bin/maturin" ] || [ ! -x "$tools_venv/bin/cargo-zigbuild" ]; then
        say "installing $ZIGLANG $ZIGBUILD $MATURIN into $tools_venv (pip)"
        rm -rf "$tools_venv"
        if ! python3 -m venv "$tools_venv" >/dev/null 2>&1 \
            || ! "$tools_venv/bin/pip" install -q "$ZIGLANG" "$ZIGBUILD" "$MATURIN" >/dev/null 2>&1; then
            rm -rf "$tools_venv"
            missing+=("$ZIGLANG, $ZIGBUILD and $MATURIN (pip install into a venv failed: python3-venv and PyPI are needed)")
            return 1
        fi
    fi
    export PATH="$tools_venv/bin:$PATH"
}

# A C compiler for a target, into CC_<target>: the first of the commands
# given that is installed, unless the variable is set.
c_compiler() {
    local target=$1 package=$2 cc
    shift 2
    local var=CC_${target//-/_}
    if [ -z "${!var:-}" ]; then
        for cc in "$@"; do
            if command -v "$cc" >/dev/null; then
                export "$var=$cc"
                break
            fi
        done
    fi
    if [ -z "${!var:-}" ] || ! command -v "${!var}" >/dev/null; then
        missing+=("a C compiler for $target (Debian: apt-get install $package; or set $var)")
        return 1
    fi
}

if wants x86_64-unknown-linux-musl; then
    std_for x86_64-unknown-linux-musl || true
    c_compiler x86_64-unknown-linux-musl musl-tools x86_64-linux-musl-gcc musl-gcc || true
fi
if wants aarch64-unknown-linux-musl || [ -n "$wheels" ]; then
    pypi_tools || true
fi
if wants aarch64-unknown-linux-musl; then
    std_for aarch64-unknown-linux-musl || true
fi
if wants x86_64-pc-windows-gnu || [ -n "$wheels" ]; then
    std_for x86_64-pc-windows-gnu || true
    c_compiler x86_64-pc-windows-gnu gcc-mingw-w64-x86-64 x86_64-w64-mingw32-gcc || true
fi
if [ -n "$wheels" ]; then
    std_for x86_64-unknown-linux-gnu || true
    std_for aarch64-unknown-linux-gnu || true
fi
if [ ${#missing[@]} -gt 0 ]; then
    for piece in "${missing[@]}"; do
        echo "release: missing: $piece" >&2
    done
    echo "release: nothing was built" >&2
    exit "$NO_TOOLCHAIN"
fi

# Build and check -------------------------------------------------------------

# What ships drops its debug information at link time (see 1. above). Set
# for the wheels too: the Windows wheel then shares its dependencies'
# builds with seekless.exe (the same profile and target).
export CARGO_PROFILE_RELEASE_STRIP=debuginfo

out="$target_dir/release-artifacts"
mkdir -p "$out"
rm -f "$out/SHA256SUMS"
packed=()

# stage NAME: a fresh directory for an artifact's files.
stage() {
    rm -rf "${out:?}/$1" "$out/$1".tar.gz "$out/$1".zip
    mkdir -p "$out/$1"
    echo "$out/$1"
}

# The README and the guides and formats it links to (docs/), and license
# files when the repository has them.
add_docs() {
    local license
    cp README.md "$1/"
    cp -r docs "$1/"
    for license in LICENSE* COPYING*; do
        if [ -e "$license" ]; then
            cp "$license" "$1/"
        fi
    done
}

epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)

pack_tar() {
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
        -C "$out" -cf - "$1" | gzip -9n >"$out/$1.tar.gz"
    packed+=("$1.tar.gz")
    say "wrote $out/$1.tar.gz ($(du -h "$out/$1.tar.gz" | cut -f1))"
}

# A zip whose bytes depend only on the files (sorted, dated by the last
# commit), as the tarballs are.
pack_zip() {
    python3 - "$out" "$1" "$epoch" <<'EOF'
import os, sys, time, zipfile
out, name, epoch = sys.argv[1], sys.argv[2], int(sys.argv[3])
stamp = time.gmtime(max(epoch, 315532800))[:6]  # zip dates start in 1980
paths = []
for root, dirs, files in os.walk(os.path.join(out, name)):
    paths += [os.path.join(root, f) for f in files]
with zipfile.ZipFile(os.path.join(out, name + ".zip"), "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
    for path in sorted(paths):
        info = zipfile.ZipInfo(os.path.relpath(path, out).replace(os.sep, "/"), stamp)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (0o755 if os.access(path, os.X_OK) else 0o644) << 16
        with open(path, "rb") as f:
            z.writestr(info, f.read())
EOF
    packed+=("$1.zip")
    say "wrote $out/$1.zip ($(du -h "$out/$1.zip" | cut -f1))"
}

# static_elf BIN MACHINE: a static ELF executable for MACHINE (as readelf
# names it).
static_elf() {
    local bin=$1 machine=$2 headers dynamic
    headers=$(readelf -hlW "$bin")
    grep -q "Machine: *$machine" <<<"$headers" \
        || fail "$bin is not for $machine: $(grep Machine <<<"$headers" | tr -s ' ')"
    dynamic=$(readelf -dW "$bin")
    if grep -q 'INTERP' <<<"$headers"; then
        fail "$bin asks for a program interpreter: $(grep -A1 INTERP <<<"$headers" | tail -1)"
    fi
    if grep -q '(NEEDED)' <<<"$dynamic"; then
        fail "$bin needs shared libraries: $(grep '(NEEDED)' <<<"$dynamic" | tr -s ' ')"
    fi
    say "$bin: $machine, statically linked: no INTERP header, no NEEDED entry ($(du -h "$bin" | cut -f1))"
}

# The DLLs a Windows binary may import: the system's own. A MinGW runtime
# DLL (libgcc_s_seh-1, libwinpthread-1, libstdc++-6) would not be on a
# user's machine.
windows_dlls() {
    local bin=$1 format dll
    format=$(objdump -f "$bin" | sed -n 's/.*file format //p')
    [ "$format" = pei-x86-64 ] || fail "$bin is not a PE32+ x86-64 executable (objdump: ${format:-nothing})"
    local dlls=()
    while read -r dll; do
        dlls+=("$dll")
        case "${dll,,}" in
            kernel32.dll | ntdll.dll | ws2_32.dll | advapi32.dll | userenv.dll | bcrypt.dll \
                | bcryptprimitives.dll | crypt32.dll | secur32.dll | shell32.dll | ole32.dll \
                | user32.dll | msvcrt.dll | ucrtbase.dll | api-ms-win-*.dll) ;;
            *) fail "$bin imports $dll, which is not a Windows system DLL" ;;
        esac
    done < <(objdump -p "$bin" | sed -n 's/^[[:space:]]*DLL Name: //p' | sort -uf)
    say "$bin: PE32+ x86-64, imports ${dlls[*]} ($(du -h "$bin" | cut -f1))"
}

# build TARGET COMMAND...: cargo's release build of seekless for TARGET
# with COMMAND (`cargo build` or `cargo zigbuild`); prints the binary's path.
build() {
    local target=$1
    shift
    say "building seekless $version for $target ($*)" >&2
    "$@" --release --locked --target "$target" -p seekless >&2
    if [ "$target" = x86_64-pc-windows-gnu ]; then
        echo "$target_dir/$target/release/seekless.exe"
    else
        echo "$target_dir/$target/release/seekless"
    fi
}

# The Linux tarball's contents: the binary, docs and the deploy files.
linux_stage() {
    local name=$1 built=$2 dir
    dir=$(stage "$name")
    mkdir -p "$dir/deploy/systemd"
    # Every check runs this very file.
    install -m 0755 "$built" "$dir/seekless"
    add_docs "$dir"
    cp deploy/Containerfile "$dir/deploy/"
    cp deploy/systemd/seekless-serve.service deploy/systemd/seekless-update.service \
        deploy/systemd/seekless-update.timer "$dir/deploy/systemd/"
    echo "$dir"
}

work=$(mktemp -d)
server=
# Whether the server has exited within 20 s.
stopped() {
    for _ in $(seq 200); do
        kill -0 "$server" 2>/dev/null || return 0
        sleep 0.1
    done
    return 1
}
cleanup() {
    if [ -n "$server" ]; then
        kill "$server" 2>/dev/null || true
        stopped || kill -KILL "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# run_checks BIN: the main job and serve, on this machine.
run_checks() {
    local bin=$1 answer first address base status code
    # The main job, from the built-in sample: "password" is listed.
    answer=$(echo password | "$bin" pwned check 2>/dev/null)
    case "$answer" in
        1*) say "pwned check: $answer" ;;
        *) fail "echo password | seekless pwned check printed ${answer:-nothing}, not a line starting with 1" ;;
    esac

    # serve, on an index built from a few lines.
    cat >"$work/corpus.txt" <<'EOF'
5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824
5BAA6000000000000000000000000000000000FF:2
7C4A8D09CA3762AF61E59520943DC26494F8941B:4222
0000000000000000000000000000000000000001:1
EOF
    "$bin" pwned prepare "$work/corpus.txt" -o "$work/pwned.idx" >/dev/null
    # The output file exists before serve starts, so that reading it
    # cannot race the redirection.
    : >"$work/serve.out"
    "$bin" pwned serve -i "$work/pwned.idx" --listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
    server=$!
    address=
    for _ in $(seq 100); do
        first=$(head -n1 "$work/serve.out")
        if [ -n "$first" ]; then
            address=${first#listening on http://}
            [ "$address" != "$first" ] || fail "serve's first line is not 'listening on http://ADDR': $first"
            break
        fi
        kill -0 "$server" 2>/dev/null || fail "serve exited: $(cat "$work/serve.err")"
        sleep 0.1
    done
    [ -n "$address" ] || fail "serve announced no address within 10 s"
    base="http://$address"

    # /health is 503 until the index is verified, then 200.
    status=
    for _ in $(seq 300); do
        status=$(curl -s -o "$work/health" -w '%{http_code}' "$base/health" || true)
        [ "$status" = 200 ] && break
        sleep 0.1
    done
    [ "$status" = 200 ] || fail "/health answered ${status:-nothing} after 30 s: $(cat "$work/health" 2>/dev/null)"
    # `sha1 NAME N hashes STATE …`, tab-separated.
    [ "$(head -n1 "$work/health" | cut -f4)" = ok ] || fail "/health says: $(cat "$work/health")"
    curl -sf "$base/range/5BAA6" -o "$work/range" || fail "GET /range/5BAA6 failed"
    printf '000000000000000000000000000000000FF:2\r\n1E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824' \
        | cmp -s - "$work/range" || fail "GET /range/5BAA6 answered: $(cat -A "$work/range")"
    "$bin" pwned probe "$base/health" >/dev/null || fail "pwned probe $base/health failed"
    say "pwned serve on $address: /health ok, /range/5BAA6 as expected, pwned probe ok"
    kill -TERM "$server"
    stopped || fail "serve did not stop within 20 s of SIGTERM"
    code=0
    wait "$server" || code=$?
    server=
    [ "$code" = 0 ] || fail "serve exited with status $code on SIGTERM: $(cat "$work/serve.err")"
}

if wants x86_64-unknown-linux-musl; then
    built=$(build x86_64-unknown-linux-musl cargo build)
    dir=$(linux_stage "seekless-$version-x86_64-linux-musl" "$built")
    static_elf "$dir/seekless" "Advanced Micro Devices X86-64"
    run_checks "$dir/seekless"
    pack_tar "seekless-$version-x86_64-linux-musl"
fi

if wants aarch64-unknown-linux-musl; then
    built=$(build aarch64-unknown-linux-musl cargo zigbuild)
    dir=$(linux_stage "seekless-$version-aarch64-linux-musl" "$built")
    static_elf "$dir/seekless" AArch64
    pack_tar "seekless-$version-aarch64-linux-musl"
fi

if wants x86_64-pc-windows-gnu; then
    built=$(build x86_64-pc-windows-gnu cargo build)
    dir=$(stage "seekless-$version-x86_64-windows-gnu")
    install -m 0755 "$built" "$dir/seekless.exe"
    windows_dlls "$dir/seekless.exe"
    add_docs "$dir"
    pack_zip "seekless-$version-x86_64-windows-gnu"
fi

# Wheels ----------------------------------------------------------------------

# wheel TARGET ARGS...: the abi3 wheel for TARGET, into $out; its file
# name is added to what SHA256SUMS covers.
wheel() {
    local target=$1 wheels_dir="$work/wheels-$1" file
    shift
    say "building the wheel for $target (maturin build${*:+ $*})"
    maturin build --release --locked --target "$target" --manifest-path crates/python/Cargo.toml \
        --out "$wheels_dir" "$@" >&2
    for file in "$wheels_dir"/*.whl; do
        [ -e "$file" ] || fail "maturin wrote no wheel for $target"
        mv "$file" "$out/"
        packed+=("${file##*/}")
        say "wrote $out/${file##*/} ($(du -h "$out/${file##*/}" | cut -f1))"
    done
}

if [ -n "$wheels" ]; then
    rm -f "$out"/seekless-*.whl
    wheel x86_64-unknown-linux-gnu --zig --compatibility manylinux2014
    wheel aarch64-unknown-linux-gnu --zig --compatibility manylinux2014
    wheel x86_64-pc-windows-gnu
fi

(cd "$out" && sha256sum "${packed[@]}" >SHA256SUMS)
say "SHA256SUMS:"
sed 's/^/release:   /' "$out/SHA256SUMS"
if wants x86_64-unknown-linux-musl; then
    say "container: podman build --format docker -t seekless:$version -f $out/seekless-$version-x86_64-linux-musl/deploy/Containerfile $out/seekless-$version-x86_64-linux-musl"
fi
