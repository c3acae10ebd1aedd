#!/usr/bin/env bash
# The one pinned nightly toolchain of the project: check-public-api.sh
# lists the API from its rustdoc JSON (cargo-public-api 0.52.0 reads format
# version 57) and .ci/run's fuzzing builds with its sanitizers, so both see
# the same compiler from run to run.
# Prints the toolchain's name when it is installed: nightly-2026-05-20, or
# `nightly` when that is the very same build; prints nothing and exits 1
# when neither is. --install installs it first when it is missing.
# (`nightly-HOST` is looked for in rustup's list: `rustup run` of a
# toolchain that is not installed could install it.)
set -euo pipefail

NIGHTLY=nightly-2026-05-20
# What `rustc -V` says in $NIGHTLY.
NIGHTLY_RUSTC="rustc 1.97.0-nightly (e50aa6fba 2026-05-19)"

installed() {
    local list
    list=$(rustup toolchain list 2>/dev/null | awk '{ print $1 }')
    if grep -q "^$NIGHTLY-" <<<"$list"; then
        echo "$NIGHTLY"
    elif grep -q '^nightly-[a-z]' <<<"$list" \
        && [ "$(rustup run nightly rustc -V 2>/dev/null)" = "$NIGHTLY_RUSTC" ]; then
        echo nightly
    else
        return 1
    fi
}

case "${1:-}" in
    "") installed ;;
    --install)
        installed && exit 0
        rustup toolchain install "$NIGHTLY" --profile minimal >&2
        installed
        ;;
    *)
        echo "usage: scripts/nightly.sh [--install]" >&2
        exit 2
        ;;
esac
