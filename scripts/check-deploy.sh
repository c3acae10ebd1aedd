#!/usr/bin/env bash
# Checks the three ways seekless is deployed, as CI runs them (.ci/run):
#
# 1. scripts/release.sh: the static musl binary, run, packed (a skip, said
#    as such, when the musl target or its C compiler cannot be had: the
#    script's status 3);
# 2. deploy/Containerfile, built with podman from the release artifact,
#    then run on an index mounted at /data: its health check
#    (`seekless pwned probe`) must pass, /range/5BAA6 must answer through
#    the published port, SIGTERM must stop it with status 0 (a skip, said
#    as such, without podman or where this machine cannot run containers);
# 3. deploy/systemd/: `systemd-analyze verify` of the units must print
#    nothing, with the binary installed where the units expect it
#    (/usr/local/bin/seekless) in a scratch root beside the host's own
#    system units; `systemd-analyze security` must rate each service's
#    exposure 2.0 or lower.
#
# Needs what scripts/release.sh needs, podman (and runc where crun cannot
# run containers) and systemd-analyze; .ci/run installs them.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "deploy: $*"; }
fail() {
    echo "deploy: FAILED: $*" >&2
    exit 1
}

metadata=$(cargo metadata --format-version 1 --no-deps --locked)
version=$(grep -o '"name":"seekless","version":"[^"]*"' <<<"$metadata" | sed 's/.*"version":"//; s/"$//')
target_dir=$(grep -o '"target_directory":"[^"]*"' <<<"$metadata" | sed 's/.*:"//; s/"$//')
stage="$target_dir/release-artifacts/seekless-$version-x86_64-linux-musl"

echo "== deploy: release tarball (scripts/release.sh)"
status=0
scripts/release.sh || status=$?
case "$status" in
    0)
        binary="$stage/seekless"
        # The README in the tarball links to the guides and formats beside it.
        listing=$(tar -tzf "$stage.tar.gz")
        for doc in README.md docs/pwned-serve.md docs/deploy.md docs/format-pwned.md; do
            grep -qx "${stage##*/}/$doc" <<<"$listing" || fail "the release tarball has no $doc"
        done
        ;;
    3)
        say "SKIPPED the release tarball and the container image: no musl build here (see above)"
        binary=
        ;;
    *) fail "scripts/release.sh exited with status $status" ;;
esac

echo "== deploy: container image (deploy/Containerfile, podman)"
if [ -z "$binary" ]; then
    say "SKIPPED: no release artifact to build the image from"
elif ! command -v podman >/dev/null; then
    say "SKIPPED: podman is not installed"
else
    image="localhost/seekless:check-$$"
    name="seekless-check-$$"
    data=$(mktemp -d)
    cleanup() {
        podman rm -f "$name" >/dev/null 2>&1 || true
        podman rmi -f "$image" >/dev/null 2>&1 || true
        rm -rf "$data"
    }
    trap cleanup EXIT
    # No base image is pulled (FROM scratch); the context is the artifact;
    # no intermediate image is kept.
    podman build --quiet --layers=false --format docker -t "$image" -f "$stage/deploy/Containerfile" "$stage" >/dev/null
    user=$(podman image inspect --format '{{.Config.User}}' "$image")
    [ "$user" = "65532:65532" ] || fail "the image runs as '$user', not 65532:65532"
    say "built $image from $stage ($(podman image inspect --format '{{.Size}}' "$image") bytes, user $user)"

    printf '5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824\n5BAA6000000000000000000000000000000000FF:2\n' \
        >"$data/corpus.txt"
    "$binary" pwned prepare "$data/corpus.txt" -o "$data/pwned.idx" >/dev/null
    rm "$data/corpus.txt"
    # The image's user is not the directory's owner: read access for all.
    chmod 0755 "$data"
    chmod 0644 "$data/pwned.idx"

    run=(run -d --name "$name" -p 127.0.0.1::8080 -v "$data:/data:ro" "$image")
    running=
    if podman "${run[@]}" >/dev/null 2>"$data/run.err"; then
        running=yes
    else
        # Seen on sandboxed machines: no CAP_SYS_RESOURCE, so podman's
        # default limits (nofile 1048576) cannot be set, and crun refuses
        # a hybrid cgroup hierarchy. runc and limits this machine allows
        # run the same image unchanged.
        say "podman run with its defaults failed: $(tail -n1 "$data/run.err")"
        podman rm -f "$name" >/dev/null 2>&1 || true
        if command -v runc >/dev/null; then
            say "trying again with runc and --ulimit nofile=4096 nproc=4096"
            if podman --runtime runc "${run[@]:0:1}" --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
                "${run[@]:1}" >/dev/null 2>"$data/run.err"; then
                running=yes
            else
                say "podman run with runc failed too: $(tail -n1 "$data/run.err")"
            fi
        fi
    fi
    if [ -z "$running" ]; then
        say "SKIPPED running the container: this machine cannot run containers (the image was built)"
    else
        # The image's own HEALTHCHECK command, run by podman (no systemd
        # timer needed): 503 while the index is verified, then 200.
        healthy=
        for _ in $(seq 120); do
            if podman healthcheck run "$name" >/dev/null 2>&1; then
                healthy=yes
                break
            fi
            [ "$(podman inspect --format '{{.State.Running}}' "$name")" = true ] \
                || fail "the container stopped: $(podman logs "$name" 2>&1 | tail -n5)"
            sleep 0.5
        done
        [ -n "$healthy" ] || fail "the health check did not pass within 60 s: $(podman logs "$name" 2>&1 | tail -n5)"
        address=$(podman port "$name" 8080/tcp | head -n1)
        range=$(curl -sf "http://$address/range/5BAA6") || fail "GET http://$address/range/5BAA6 failed"
        [ "$range" = $'000000000000000000000000000000000FF:2\r\n1E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824' ] \
            || fail "GET /range/5BAA6 through the published port answered: $range"
        podman stop -t 20 "$name" >/dev/null
        code=$(podman inspect --format '{{.State.ExitCode}}' "$name")
        [ "$code" = 0 ] || fail "the container exited with status $code on SIGTERM"
        say "ran $image: health check passed, /range/5BAA6 answered on $address, stopped with status 0"
    fi
    cleanup
    trap - EXIT
fi

echo "== deploy: systemd units (deploy/systemd, systemd-analyze)"
if ! command -v systemd-analyze >/dev/null || [ ! -d /usr/lib/systemd/system ]; then
    say "SKIPPED: systemd-analyze or the system's units are not installed"
else
    if [ -z "$binary" ]; then
        # No static binary: the one the tests built stands in for it.
        binary="$target_dir/debug/seekless"
        [ -x "$binary" ] || cargo build --locked -p seekless
    fi
    root=$(mktemp -d)
    # A scratch root: the host's system units (the targets the units name),
    # kill (ExecReload), the binary where the units run it, the units.
    mkdir -p "$root/usr/lib/systemd" "$root/usr/bin" "$root/usr/local/bin" "$root/etc/systemd/system"
    ln -s usr/bin "$root/bin"
    cp -a /usr/lib/systemd/system "$root/usr/lib/systemd/"
    cp "$(type -P kill)" "$root/usr/bin/kill"
    install -m 0755 "$binary" "$root/usr/local/bin/seekless"
    units=(seekless-serve.service seekless-update.service seekless-update.timer)
    for unit in "${units[@]}"; do
        cp "deploy/systemd/$unit" "$root/etc/systemd/system/"
    done
    # verify reports unknown keys and values it cannot parse on stderr, and
    # fails only for some: any output is a failure.
    report=$(cd "$root/etc/systemd/system" && systemd-analyze verify --root="$root" "${units[@]}" 2>&1) \
        || fail "systemd-analyze verify: $report"
    [ -z "$report" ] || fail "systemd-analyze verify: $report"
    say "systemd-analyze verify: ${units[*]} clean ($binary at /usr/local/bin/seekless)"
    systemd_version=$(systemd-analyze --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p')
    if [ "${systemd_version:-0}" -ge 250 ]; then
        for unit in seekless-serve.service seekless-update.service; do
            exposure=$(cd "$root/etc/systemd/system" \
                && systemd-analyze security --offline=yes --root="$root" --threshold=20 "$unit" 2>&1) \
                || fail "$unit: $(tail -n1 <<<"$exposure")"
            say "$(tail -n1 <<<"$exposure" | sed 's/^→ //')"
        done
    else
        say "systemd-analyze security --offline needs systemd 250 or later: exposure not rated"
    fi
    rm -rf "$root"
fi
