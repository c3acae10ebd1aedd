#!/usr/bin/env bash
# Builds the release artifact: a static `seekless` for x86_64 Linux (musl),
# checked before it is packed.
#
#   scripts/release.sh
#
# 1. builds `seekless` for x86_64-unknown-linux-musl (release profile);
# 2. checks that it is statically linked (no program interpreter, no
#    shared library needed);
# 3. runs it: `pwned check` against the built-in sample, then `pwned
#    prepare` of a few lines and `pwned serve` on them on 127.0.0.1 (an
#    ephemeral port), asked for /health and /range/5BAA6 with curl and with
#    `pwned probe`, then stopped with SIGTERM (it must exit 0);
# 4. writes target/release-artifacts/seekless-VERSION-x86_64-linux-musl.tar.gz
#    (the binary, README.md, docs/, deploy/: the Containerfile and the systemd
#    units) and SHA256SUMS beside it. The tarball's directory stays there
#    unpacked: it is the Containerfile's build context.
#
# Needs: rustup (or a toolchain that has the musl target), a C compiler for
# musl (ring and libdeflate have C parts: Debian's musl-tools gives
# musl-gcc, or set CC_x86_64_unknown_linux_musl), curl, readelf and strip
# (binutils), tar, gzip, sha256sum.
#
# Exit status: 0 when the artifact is written; 3 when the musl target or its
# C compiler cannot be had (nothing was built: CI skips the step, saying
# so); 1 when anything else fails.
set -Eeuo pipefail
trap 'echo "release: failed (line $LINENO: $BASH_COMMAND)" >&2; exit 1' ERR
cd "$(dirname "$0")/.."

TARGET=x86_64-unknown-linux-musl
NAME_ARCH=x86_64-linux-musl
NO_MUSL=3

say() { echo "release: $*"; }
fail() {
    echo "release: $*" >&2
    exit 1
}
no_musl() {
    echo "release: cannot build for $TARGET: $*" >&2
    exit "$NO_MUSL"
}

for tool in cargo curl readelf strip tar gzip sha256sum; do
    command -v "$tool" >/dev/null || fail "$tool is needed and not installed"
done

# The target's standard library.
sysroot=$(rustc --print sysroot)
if [ ! -d "$sysroot/lib/rustlib/$TARGET" ]; then
    command -v rustup >/dev/null \
        || no_musl "the toolchain has no $TARGET standard library and there is no rustup to add it"
    say "adding the $TARGET target (rustup)"
    rustup target add "$TARGET" || no_musl "rustup target add $TARGET failed"
fi

# A C compiler that targets musl, for the crates with C parts.
cc_var=CC_${TARGET//-/_}
if [ -z "${!cc_var:-}" ]; then
    for cc in x86_64-linux-musl-gcc musl-gcc; do
        if command -v "$cc" >/dev/null; then
            export "$cc_var=$cc"
            break
        fi
    done
fi
[ -n "${!cc_var:-}" ] \
    || no_musl "no C compiler for musl (Debian: apt-get install musl-tools; or set $cc_var)"
command -v "${!cc_var}" >/dev/null || no_musl "$cc_var=${!cc_var} is not a command"

metadata=$(cargo metadata --format-version 1 --no-deps --locked)
version=$(grep -o '"name":"seekless","version":"[^"]*"' <<<"$metadata" | sed 's/.*"version":"//; s/"$//')
target_dir=$(grep -o '"target_directory":"[^"]*"' <<<"$metadata" | sed 's/.*:"//; s/"$//')
if [ -z "$version" ] || [ -z "$target_dir" ]; then
    fail "cargo metadata: no version or target directory"
fi

say "building seekless $version for $TARGET (release, ${cc_var}=${!cc_var})"
cargo build --release --locked --target "$TARGET" -p seekless
built="$target_dir/$TARGET/release/seekless"

name="seekless-$version-$NAME_ARCH"
out="$target_dir/release-artifacts"
stage="$out/$name"
rm -rf "$stage" "$out/$name.tar.gz" "$out/SHA256SUMS"
mkdir -p "$stage/deploy/systemd"
install -m 0755 "$built" "$stage/seekless"
bin="$stage/seekless"
# The release profile keeps line tables (for profiles and backtraces of
# local builds): 43 MB. What ships keeps its symbols (a backtrace still
# names functions) and drops the rest: under 10 MB. Every check below runs
# this very file.
strip --strip-debug "$bin"

# Static: no program interpreter (ld.so) and no shared library to load.
headers=$(readelf -lW "$bin")
dynamic=$(readelf -dW "$bin")
if grep -q 'INTERP' <<<"$headers"; then
    fail "$bin asks for a program interpreter: $(grep -A1 INTERP <<<"$headers" | tail -1)"
fi
if grep -q '(NEEDED)' <<<"$dynamic"; then
    fail "$bin needs shared libraries: $(grep '(NEEDED)' <<<"$dynamic" | tr -s ' ')"
fi
if command -v file >/dev/null; then
    say "$(file -b "$bin" | cut -d, -f1-5)"
fi
say "statically linked: no INTERP header, no NEEDED entry ($(du -h "$bin" | cut -f1))"

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
# The output file exists before serve starts, so that reading it cannot
# race the redirection.
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

# The tarball: the binary, the README and the guides and formats it links
# to (docs/), the deploy files (and license files when the repository has
# them), owned by root, dated by the last commit, so that the same tree
# gives the same bytes.
cp README.md "$stage/"
cp -r docs "$stage/"
for license in LICENSE* COPYING*; do
    if [ -e "$license" ]; then
        cp "$license" "$stage/"
    fi
done
cp deploy/Containerfile "$stage/deploy/"
cp deploy/systemd/seekless-serve.service deploy/systemd/seekless-update.service \
    deploy/systemd/seekless-update.timer "$stage/deploy/systemd/"
epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
    -C "$out" -cf - "$name" | gzip -9n >"$out/$name.tar.gz"
(cd "$out" && sha256sum "$name.tar.gz" >SHA256SUMS)
say "wrote $out/$name.tar.gz ($(du -h "$out/$name.tar.gz" | cut -f1))"
say "$(cat "$out/SHA256SUMS")"
say "container: podman build --format docker -t seekless:$version -f $stage/deploy/Containerfile $stage"
