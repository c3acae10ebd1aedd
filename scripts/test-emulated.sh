#!/usr/bin/env bash
# The library crates' tests built for ARM64 Linux and for Windows, and run
# there: under qemu-aarch64-static and under Wine, each test program from its
# crate's directory, as `cargo test` runs it.
#
#   scripts/test-emulated.sh [--aarch64] [--windows] [-p CRATE]... [--skip TEST]...
#
#   --aarch64   aarch64-unknown-linux-musl (cargo-zigbuild; qemu-aarch64-static)
#   --windows   x86_64-pc-windows-gnu (MinGW-w64; Wine)
#               (neither: both)
#   -p CRATE    only this crate's tests (repeatable; default: seekless-pwned
#               with its update and serve features, seekless-exhash,
#               seekless-bencode, seekless-blocks)
#   --skip TEST a test program not to run, by name (repeatable)
#
# Built in the release profile with the settings scripts/release.sh uses,
# so that after a release run the dependencies it built for these targets
# are reused. Not run anywhere here:
# - pwned's `update` and `update_suspect` tests: every one asks a local
#   server for all 1,048,576 ranges, which takes 150 s under qemu and
#   460 s under Wine 8.0 for one update (measured on the 2-core CI
#   machine; 35-45 s natively); nor the two tests of pwned's
#   tests/mirror.rs that do (`walk_all_ranges_…`).
#   scripts/check-platforms.sh compares both platforms' `update` against
#   the x86-64 one's, from bundles, and with --slow over the range API.
# - under qemu, pwned's test of a memory budget beyond the address space:
#   qemu-user keeps bookkeeping for every page it maps, and for that
#   reservation it grew past 24 GB here until the kernel killed it.
# - the CLI's tests (crates/cli/tests): they drive the Linux binary with
#   Unix tools (curl, signals, /proc); check-platforms.sh runs the ARM64
#   and Windows binaries through the same commands instead.
#
# Needs: for aarch64 cargo-zigbuild and ziglang (on PATH, or in the venv
# scripts/release.sh makes under the target directory) and
# qemu-aarch64-static; for Windows x86_64-w64-mingw32-gcc and wine64.
# Exit status: 0 when every test ran passed, 1 when one failed, 3 when a
# platform asked for cannot be tested here (what is missing is named).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
. scripts/wine/setup.sh

say() { echo "test-emulated: $*"; }

platforms=()
crates=()
skips=(update update_suspect)
while [ $# -gt 0 ]; do
    case $1 in
        --aarch64) platforms+=(aarch64) ;;
        --windows) platforms+=(windows) ;;
        -p)
            [ $# -ge 2 ] || { say "-p needs a crate" >&2; exit 2; }
            crates+=("$2")
            shift
            ;;
        --skip)
            [ $# -ge 2 ] || { say "--skip needs a test name" >&2; exit 2; }
            skips+=("$2")
            shift
            ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *) say "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
[ ${#platforms[@]} -gt 0 ] || platforms=(aarch64 windows)
[ ${#crates[@]} -gt 0 ] || crates=(seekless-pwned seekless-exhash seekless-bencode seekless-blocks)

target_dir=$(cargo metadata --format-version 1 --no-deps --locked \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
# cargo-zigbuild where scripts/release.sh put it, when not on PATH.
if ! command -v cargo-zigbuild >/dev/null && [ -x "$target_dir/release-tools/bin/cargo-zigbuild" ]; then
    export PATH="$target_dir/release-tools/bin:$PATH"
fi
# scripts/release.sh's profile settings: its dependency builds are reused
# (when RUSTFLAGS is the same too: CI sets -D warnings for both).
export CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=debuginfo

package_args=()
for crate in "${crates[@]}"; do
    package_args+=(-p "$crate")
    if [ "$crate" = seekless-pwned ]; then
        package_args+=(--features seekless-pwned/update,seekless-pwned/serve)
    fi
done

# build_tests TARGET COMMAND...: the test programs of the crates for
# TARGET, one "PATH CRATE_DIR" line each.
build_tests() {
    local target=$1
    shift
    "$@" --release --locked --tests --target "$target" "${package_args[@]}" \
        --message-format json-render-diagnostics \
        | python3 -c '
import json, os, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m["profile"]["test"] and m.get("executable"):
        print(m["executable"], os.path.dirname(m["manifest_path"]))
'
}

missing=()
failed=0
ran=()
# Arguments for every test program of the platform being run (libtest's).
test_args=()

# run_tests PLATFORM LIST RUNNER...: each test program of LIST, by RUNNER,
# from its crate's directory.
run_tests() {
    local plat=$1 list=$2 exe dir name skip start status
    shift 2
    while read -r exe dir; do
        name=$(basename "$exe" .exe)
        name=${name%-*}
        for skip in "${skips[@]}"; do
            if [ "$name" = "$skip" ]; then
                say "$plat: $(basename "$dir") $name: not run (see the script's header)"
                continue 2
            fi
        done
        start=$SECONDS
        status=0
        # The outside programs some tests drive (node, KeePassXC, a browser)
        # (and nginx) are the host's, not the emulated platform's: CI's demand
        # that they run (SEEKLESS_REQUIRE_*) is met by the native test step.
        (cd "$dir" && exec env -u SEEKLESS_REQUIRE_NODE -u SEEKLESS_REQUIRE_KEEPASSXC \
            -u SEEKLESS_REQUIRE_CHROMIUM -u SEEKLESS_REQUIRE_NGINX "$@" "$exe" -q "${test_args[@]}") >"$work/out" 2>&1 || status=$?
        if [ "$status" = 0 ]; then
            say "$plat: $(basename "$dir") $name: $(grep '^test result' "$work/out" | tail -1 | sed 's/^test result: ok\. //; s/;.*//'), $((SECONDS - start)) s"
        else
            say "$plat: $(basename "$dir") $name: FAILED (status $status)"
            tail -n 40 "$work/out"
            failed=1
        fi
        ran+=("$plat $name")
    done <"$list"
}

work=$(mktemp -d)
cleanup() {
    [ -z "$wineserver_cmd" ] || "$wineserver_cmd" -k 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

for plat in "${platforms[@]}"; do
    case $plat in
        aarch64)
            target=aarch64-unknown-linux-musl
            command -v cargo-zigbuild >/dev/null || missing+=("cargo-zigbuild (pip install cargo-zigbuild ziglang; or run scripts/release.sh first)")
            command -v qemu-aarch64-static >/dev/null || missing+=("qemu-aarch64-static (Debian: apt-get install qemu-user-static)")
            [ ${#missing[@]} -eq 0 ] || continue
            rustup target add "$target" >/dev/null 2>&1 || true
            say "aarch64: building the tests (cargo zigbuild --target $target)"
            build_tests "$target" cargo zigbuild >"$work/aarch64.list"
            test_args=(--skip walk_all_ranges_ --skip build::partition::tests::a_budget_beyond_the_address_space_is_what_it_has_room_for)
            run_tests aarch64 "$work/aarch64.list" qemu-aarch64-static
            ;;
        windows)
            target=x86_64-pc-windows-gnu
            command -v x86_64-w64-mingw32-gcc >/dev/null || missing+=("x86_64-w64-mingw32-gcc (Debian: apt-get install gcc-mingw-w64-x86-64)")
            reason=
            wine_setup "$target_dir/check-platforms/wine-prefix" || missing+=("$reason")
            [ ${#missing[@]} -eq 0 ] || continue
            rustup target add "$target" >/dev/null 2>&1 || true
            # As release.sh sets it: the C parts' builds are reused.
            export CC_x86_64_pc_windows_gnu=${CC_x86_64_pc_windows_gnu:-x86_64-w64-mingw32-gcc}
            say "windows: building the tests (cargo build --target $target)"
            build_tests "$target" cargo build >"$work/windows.list"
            first=$(head -n 1 "$work/windows.list" | cut -d' ' -f1)
            if [ -n "$first" ] && ! wine_prng "$first" "$(dirname "$first")"; then
                missing+=("$reason")
                continue
            fi
            test_args=(--skip walk_all_ranges_)
            run_tests windows "$work/windows.list" "$wine"
            ;;
    esac
done

if [ ${#missing[@]} -gt 0 ]; then
    for piece in "${missing[@]}"; do
        say "missing: $piece" >&2
    done
    exit 3
fi
[ "$failed" = 0 ] || { say "some tests FAILED"; exit 1; }
say "${#ran[@]} test programs passed"
