#!/usr/bin/env bash
# The public API of each library crate (seekless-bencode, -blocks, -exhash,
# -pwned), as cargo-public-api lists it, is kept in api/:
#   api/CRATE.txt               with the crate's default features;
#   api/CRATE.all-features.txt  with --all-features (crates with features).
# This script lists them again from the sources and fails, showing the
# difference, when a file no longer matches: a change to the public API is
# then seen, and reviewed, as a diff of api/.
#
#   scripts/check-public-api.sh            # check (CI: .ci/run)
#   scripts/check-public-api.sh --bless    # rewrite api/ from the sources
#   scripts/check-public-api.sh --install  # install what it needs if missing
#
# To bless a change: run it with --bless, read `git diff api/`, commit api/
# with the change.
#
# Listing: `cargo public-api -ss` (no blanket impls, no auto-trait impls),
# one rustdoc JSON build per crate and feature set, with nightly rustdoc,
# into TARGET_DIR/public-api (TARGET_DIR: the workspace's target directory,
# CARGO_TARGET_DIR when set).
#
# Needs cargo-public-api 0.52.0 and the nightly it reads the rustdoc JSON
# of (format version 57): the project's pinned nightly, scripts/nightly.sh
# (nightly-2026-05-20). Other versions list the API with other details, so
# both are pinned; set PUBLIC_API_TOOLCHAIN to use another toolchain anyway.
# Exit status: 0 when every file matches (or was written), 1 when one
# differs or the listing fails, 2 for a usage error.
set -euo pipefail
cd "$(dirname "$0")/.."

TOOL_VERSION=0.52.0
CRATES=(seekless-bencode seekless-blocks seekless-exhash seekless-pwned)
OUT=api

say() { echo "public-api: $*"; }
fail() {
    echo "public-api: $*" >&2
    exit 1
}

mode=check
case "${1:-}" in
    "") ;;
    --bless) mode=bless ;;
    --install) mode=install ;;
    -h | --help)
        sed -n '2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "$0"
        exit 0
        ;;
    *)
        echo "usage: scripts/check-public-api.sh [--bless | --install]" >&2
        exit 2
        ;;
esac

# The installed cargo-public-api's version, or nothing.
tool_version() {
    cargo public-api --version 2>/dev/null | awk '{ print $2 }' || true
}

# The toolchain to list with: PUBLIC_API_TOOLCHAIN, else the project's
# pinned nightly (scripts/nightly.sh) when it is installed; nothing when not.
toolchain() {
    if [ -n "${PUBLIC_API_TOOLCHAIN:-}" ]; then
        echo "$PUBLIC_API_TOOLCHAIN"
        return
    fi
    scripts/nightly.sh || true
}

if [ "$mode" = install ]; then
    if [ "$(tool_version)" != "$TOOL_VERSION" ]; then
        say "installing cargo-public-api $TOOL_VERSION"
        cargo install --locked "cargo-public-api@$TOOL_VERSION"
    fi
    if [ -z "$(toolchain)" ]; then
        say "installing the pinned nightly"
        scripts/nightly.sh --install >/dev/null
    fi
    say "cargo-public-api $(tool_version), toolchain $(toolchain)"
    exit 0
fi

found=$(tool_version)
[ "$found" = "$TOOL_VERSION" ] || fail "needs cargo-public-api $TOOL_VERSION, found ${found:-none}:" \
    "cargo install --locked cargo-public-api@$TOOL_VERSION (or run this with --install)"
toolchain=$(toolchain)
[ -n "$toolchain" ] || fail "needs the pinned nightly toolchain:" \
    "scripts/nightly.sh --install (or run this with --install)"

metadata=$(cargo metadata --format-version 1 --no-deps --locked)
target_dir=$(grep -o '"target_directory":"[^"]*"' <<<"$metadata" | sed 's/.*:"//; s/"$//')
[ -n "$target_dir" ] || fail "cargo metadata: no target directory"
# The library crates that declare features: they get an --all-features list.
with_features=$(python3 -c '
import json, sys
for package in json.load(sys.stdin)["packages"]:
    if package["features"]:
        print(package["name"])' <<<"$metadata")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# list FILE CRATE [ARGS...]: cargo public-api's list of CRATE into $work/FILE.
list() {
    local file=$1 crate=$2
    shift 2
    if ! CARGO_TARGET_DIR="$target_dir/public-api" cargo "+$toolchain" public-api \
        --color never -ss -p "$crate" "$@" >"$work/$file" 2>"$work/$file.log"; then
        cat "$work/$file.log" >&2
        fail "cargo +$toolchain public-api -ss -p $crate $* failed"
    fi
    say "$crate ${*:-(default features)}: $(wc -l <"$work/$file") lines"
}

files=()
for crate in "${CRATES[@]}"; do
    list "$crate.txt" "$crate"
    files+=("$crate.txt")
    if grep -qx "$crate" <<<"$with_features"; then
        list "$crate.all-features.txt" "$crate" --all-features
        files+=("$crate.all-features.txt")
    fi
done

differ=()
if [ "$mode" = bless ]; then
    mkdir -p "$OUT"
    for file in "${files[@]}"; do
        if ! cmp -s "$work/$file" "$OUT/$file"; then
            cp "$work/$file" "$OUT/$file"
            say "wrote $OUT/$file"
        fi
    done
else
    for file in "${files[@]}"; do
        diff -uN --label "$OUT/$file (committed)" --label "$OUT/$file (from the sources)" \
            "$OUT/$file" "$work/$file" || differ+=("$OUT/$file")
    done
fi
# Files of crates or feature sets no longer listed.
for stale in "$OUT"/*.txt; do
    [ -e "$stale" ] || continue
    case " ${files[*]} " in
        *" ${stale#"$OUT"/} "*) continue ;;
    esac
    if [ "$mode" = bless ]; then
        rm "$stale"
        say "removed $stale"
    else
        differ+=("$stale (no longer listed)")
    fi
done

if [ "${#differ[@]}" -gt 0 ]; then
    fail "the public API is not what api/ says: ${differ[*]}." \
        "If the change is meant: scripts/check-public-api.sh --bless, and commit api/."
fi
say "api/ is up to date ($toolchain, cargo-public-api $TOOL_VERSION)"
