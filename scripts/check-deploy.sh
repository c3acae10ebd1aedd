#!/usr/bin/env bash
# Checks the four ways seekless is deployed, as CI runs them (.ci/run):
#
# 1. scripts/release.sh: the static binaries, checked, packed (a skip, said
#    as such, when a target's toolchain cannot be had: the script's status
#    3). With --artifacts, what an earlier run of it wrote is checked
#    instead (CI runs it as a step of its own);
# 2. deploy/Containerfile, built with podman from the release artifacts
#    into one multi-arch manifest list (linux/amd64 from the x86_64
#    tarball, linux/arm64 from the aarch64 one). The amd64 image is run on
#    an index mounted at /data: its health check (`seekless pwned probe`)
#    must pass, /range/5BAA6 must answer through the published port,
#    SIGTERM must stop it with status 0 (a skip, said as such, without
#    podman or where this machine cannot run containers). The arm64
#    image's binary, copied out of it, runs under qemu-aarch64-static and
#    must answer as the amd64 one does;
# 3. deploy/systemd/: `systemd-analyze verify` of the units must print
#    nothing, with the binary installed where the units expect it
#    (/usr/local/bin/seekless) in a scratch root beside the host's own
#    system units; `systemd-analyze security` must rate each service's
#    exposure 2.0 or lower;
# 4. deploy/kubernetes/: the objects `kubectl kustomize` renders (the
#    files themselves, said as such, without kubectl) valid against the
#    Kubernetes 1.34 JSON schemas, offline (kubernetes-validate --strict:
#    an unknown field, a wrong type or an unknown kind fails), then what
#    the schemas cannot say (scripts/check-kubernetes.py: non-root as the
#    image's user, read-only roots, no capabilities, serve's probes on
#    /health, the image seekless:VERSION, CA certificates for HTTPS, each
#    update writing what its pod serves) and every command and flag one
#    the binary's help lists. Broken copies of the manifests must be
#    refused by both checks, so a check that passes everything fails.
#
#   scripts/check-deploy.sh              # all four, release.sh run first
#   scripts/check-deploy.sh --artifacts  # all four, on what release.sh wrote
#   scripts/check-deploy.sh --kubernetes # the fourth alone (the debug binary)
#   scripts/check-deploy.sh --install    # install kubernetes-validate (CI's install step)
#
# Needs what scripts/release.sh needs, podman (and runc where crun cannot
# run containers), systemd-analyze, kubectl (for kustomize) and
# kubernetes-validate (--install puts it into a venv under target/); .ci/run
# installs them.
set -euo pipefail
cd "$(dirname "$0")/.."

# kubernetes-validate carries the schemas of each Kubernetes version; these
# are the versions pip resolved for it, pinned.
KUBERNETES_VERSION=1.34.0
KUBERNETES_VALIDATE=(kubernetes-validate==1.34.1 jsonschema==4.26.0 jsonschema-specifications==2025.9.1
    referencing==0.37.0 rpds-py==2026.9.1 attrs==26.1.0 PyYAML==6.0.4 importlib_resources==7.1.0
    packaging==26.4 typing_extensions==4.16.0)

mode=all
case "${1:-}" in
    "") ;;
    --artifacts) mode=artifacts ;;
    --kubernetes) mode=kubernetes ;;
    --install) mode=install ;;
    *)
        echo "usage: scripts/check-deploy.sh [--artifacts | --kubernetes | --install]" >&2
        exit 2
        ;;
esac

say() { echo "deploy: $*"; }
fail() {
    echo "deploy: FAILED: $*" >&2
    exit 1
}

metadata=$(cargo metadata --format-version 1 --no-deps --locked)
version=$(grep -o '"name":"seekless","version":"[^"]*"' <<<"$metadata" | sed 's/.*"version":"//; s/"$//')
target_dir=$(grep -o '"target_directory":"[^"]*"' <<<"$metadata" | sed 's/.*:"//; s/"$//')
artifacts="$target_dir/release-artifacts"
stage="$artifacts/seekless-$version-x86_64-linux-musl"
arm_stage="$artifacts/seekless-$version-aarch64-linux-musl"
venv="$target_dir/kubernetes-validate"

# The validator, pinned, in a venv of its own (as release.sh keeps its PyPI
# tools); made again when the pins change.
if [ "$mode" = install ]; then
    if [ "$("$venv/bin/pip" freeze 2>/dev/null | sort -f)" = "$(printf '%s\n' "${KUBERNETES_VALIDATE[@]}" | sort -f)" ]; then
        say "${KUBERNETES_VALIDATE[0]} is installed in $venv"
        exit 0
    fi
    say "installing ${KUBERNETES_VALIDATE[*]} into $venv (pip)"
    rm -rf "$venv"
    if ! python3 -m venv "$venv" || ! "$venv/bin/pip" install -q --no-deps "${KUBERNETES_VALIDATE[@]}" \
        || ! "$venv/bin/pip" check >/dev/null; then
        rm -rf "$venv"
        fail "cannot install ${KUBERNETES_VALIDATE[0]} from PyPI into $venv (python3-venv and PyPI needed)"
    fi
    exit 0
fi

# kubernetes-validate on FILE...: any output is a failure (an unknown kind
# or apiVersion is only warned of); says why on stdout.
validate() {
    local out
    out=$("$venv/bin/kubernetes-validate" --strict --quiet --kubernetes-version "$KUBERNETES_VERSION" "$@" 2>&1) \
        && [ -z "$out" ] && return 0
    echo "$out"
    return 1
}

# Part 4: deploy/kubernetes/, with $binary (when set) for the flags.
check_kubernetes() {
    echo "== deploy: Kubernetes manifests (deploy/kubernetes, kubernetes-validate)"
    [ -x "$venv/bin/kubernetes-validate" ] \
        || fail "no kubernetes-validate in $venv: run scripts/check-deploy.sh --install"
    local scratch file objects=() rendered=() report commands where command flags flag help case broken
    scratch=$(mktemp -d)
    # shellcheck disable=SC2064 # the directory is known now
    trap "rm -rf '$scratch'" EXIT
    # What `kubectl apply -k` sends, when kubectl is here; else the files.
    if command -v kubectl >/dev/null; then
        kubectl kustomize deploy/kubernetes >"$scratch/rendered.yaml" 2>"$scratch/kustomize.err" \
            || fail "kubectl kustomize deploy/kubernetes: $(tail -n1 "$scratch/kustomize.err")"
        objects=("$scratch/rendered.yaml")
        rendered=(--rendered "$scratch/rendered.yaml")
        say "rendered by kubectl kustomize ($(kubectl version --client 2>/dev/null | sed -n 's/^Kustomize Version: //p'))"
    else
        for file in deploy/kubernetes/*.yaml; do
            [ "${file##*/}" = kustomization.yaml ] || objects+=("$file")
        done
        say "SKIPPED rendering with kustomize: kubectl is not installed (the files are checked as they are)"
    fi
    report=$(validate "${objects[@]}") || fail "kubernetes-validate: ${report//"$scratch/rendered.yaml"/deploy/kubernetes (as kustomize renders it)}"
    commands=$("$venv/bin/python" scripts/check-kubernetes.py --version "$version" "${rendered[@]}" deploy/kubernetes) \
        || exit 1
    if [ -n "$binary" ]; then
        while IFS=$'\t' read -r where command flags; do
            help=$("$binary" pwned "$command" --help) || fail "$where: \`seekless pwned $command\` is no command"
            for flag in $flags; do
                grep -qE -- "(^|[ ,])$flag([ =,]|\$)" <<<"$help" \
                    || fail "$where: \`seekless pwned $command\` has no flag $flag ($binary)"
            done
        done <<<"$commands"
        say "every container's command and flags are the CLI's ($binary)"
    else
        say "SKIPPED checking the containers' flags against the CLI: no binary (see above)"
    fi
    # Both checks must refuse broken copies: the schemas a misspelt field, a
    # wrong type and an unknown apiVersion; the properties a writable root,
    # root, a probe elsewhere and no CA bundle.
    for case in 's/readOnlyRootFilesystem: true/readOnlyRootFileSystem: true/' \
        's/replicas: \([0-9]*\)/replicas: "\1"/' 's#apps/v1#apps/v2#'; do
        sed "$case" "${objects[0]}" >"$scratch/broken.yaml"
        ! cmp -s "$scratch/broken.yaml" "${objects[0]}" || fail "the broken copy ($case) is no different"
        ! validate "$scratch/broken.yaml" >/dev/null \
            || fail "kubernetes-validate accepted a broken copy of ${objects[0]##*/} ($case)"
    done
    for case in '0,/readOnlyRootFilesystem: true/s//readOnlyRootFilesystem: false/' \
        '0,/runAsUser: 65532/s//runAsUser: 0/' '0,/path: \/health/s//path: \/healthz/' \
        's/SSL_CERT_FILE/SSL_CERT_DIR/'; do
        rm -rf "$scratch/broken"
        mkdir "$scratch/broken"
        cp deploy/kubernetes/*.yaml "$scratch/broken/"
        broken=()
        if [ ${#rendered[@]} -gt 0 ]; then
            sed "$case" "$scratch/rendered.yaml" >"$scratch/broken.yaml"
            ! cmp -s "$scratch/broken.yaml" "$scratch/rendered.yaml" || fail "the broken copy ($case) is no different"
            broken=(--rendered "$scratch/broken.yaml")
        else
            sed -i "$case" "$scratch"/broken/*.yaml
        fi
        ! "$venv/bin/python" scripts/check-kubernetes.py --version "$version" "${broken[@]}" "$scratch/broken" \
            >/dev/null 2>&1 || fail "scripts/check-kubernetes.py accepted a broken copy ($case)"
    done
    say "broken copies refused: a misspelt field, a wrong type, an unknown apiVersion (schemas); a writable root, root, a probe elsewhere, no CA bundle (properties)"
    say "deploy/kubernetes: valid against Kubernetes ${KUBERNETES_VERSION%.0} (strict, offline), non-root, read-only roots, probes on /health, seekless:$version"
    rm -rf "$scratch"
    trap - EXIT
}

if [ "$mode" = kubernetes ]; then
    cargo build --quiet --locked -p seekless
    binary="$target_dir/debug/seekless"
    check_kubernetes
    exit 0
fi

echo "== deploy: release artifacts (scripts/release.sh)"
status=0
if [ "$mode" = artifacts ]; then
    [ -e "$artifacts/SHA256SUMS" ] || status=3
else
    scripts/release.sh || status=$?
fi
case "$status" in
    0)
        binary="$stage/seekless"
        (cd "$artifacts" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match the artifacts"
        # The README in each archive links to the guides and formats beside it.
        for archive in "$stage.tar.gz" "$arm_stage.tar.gz" "$artifacts/seekless-$version-x86_64-windows-gnu.zip"; do
            [ -e "$archive" ] || fail "no $archive"
            if [ "${archive%.zip}" != "$archive" ]; then
                listing=$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$archive")
                top=${archive##*/}
                top=${top%.zip}
            else
                listing=$(tar -tzf "$archive")
                top=${archive##*/}
                top=${top%.tar.gz}
            fi
            for doc in README.md docs/pwned-serve.md docs/deploy.md docs/format-pwned.md docs/windows.md; do
                grep -qx "$top/$doc" <<<"$listing" || fail "$archive has no $doc"
            done
            grep -q "  ${archive##*/}\$" "$artifacts/SHA256SUMS" \
                || fail "SHA256SUMS does not cover ${archive##*/}"
        done
        say "$(wc -l <"$artifacts/SHA256SUMS") artifacts match SHA256SUMS; every archive carries the README and docs/"
        ;;
    3)
        say "SKIPPED the release artifacts and the container image: no release build here (see above)"
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
    manifest="localhost/seekless:check-$$"
    image="$manifest-amd64"
    arm_image="$manifest-arm64"
    name="seekless-check-$$"
    data=$(mktemp -d)
    cleanup() {
        podman rm -f "$name" "$name-arm64" >/dev/null 2>&1 || true
        podman manifest rm "$manifest" >/dev/null 2>&1 || true
        podman rmi -f "$image" "$arm_image" >/dev/null 2>&1 || true
        rm -rf "$data"
    }
    trap cleanup EXIT
    # One manifest list, an image per platform, each from its own
    # artifact. No base image is pulled (FROM scratch) and nothing runs in
    # the build, so the arm64 image needs no emulator; no intermediate
    # image is kept.
    podman manifest create "$manifest" >/dev/null
    for platform in amd64 arm64; do
        if [ "$platform" = amd64 ]; then
            context=$stage tag=$image
        else
            context=$arm_stage tag=$arm_image
        fi
        podman build --quiet --layers=false --format docker --platform "linux/$platform" -t "$tag" \
            -f "$context/deploy/Containerfile" "$context" >/dev/null
        arch=$(podman image inspect --format '{{.Os}}/{{.Architecture}}' "$tag")
        [ "$arch" = "linux/$platform" ] || fail "$tag is for $arch, not linux/$platform"
        user=$(podman image inspect --format '{{.Config.User}}' "$tag")
        [ "$user" = "65532:65532" ] || fail "$tag runs as '$user', not 65532:65532"
        podman manifest add "$manifest" "containers-storage:$tag" >/dev/null
        say "built $tag from $context ($(podman image inspect --format '{{.Size}}' "$tag") bytes, user $user)"
    done
    platforms=$(podman manifest inspect "$manifest" \
        | python3 -c 'import json, sys; print(" ".join(sorted(m["platform"]["os"] + "/" + m["platform"]["architecture"] for m in json.load(sys.stdin)["manifests"])))')
    [ "$platforms" = "linux/amd64 linux/arm64" ] || fail "the manifest list holds $platforms"
    say "manifest list $manifest: $platforms"

    # The arm64 image's own binary, under qemu, answers as the amd64 one.
    if command -v qemu-aarch64-static >/dev/null; then
        podman create --platform linux/arm64 --name "$name-arm64" "$arm_image" >/dev/null
        podman cp "$name-arm64:/seekless" "$data/seekless-arm64"
        podman rm "$name-arm64" >/dev/null
        expected=$(echo password | "$binary" pwned check 2>&1)
        got=$(echo password | qemu-aarch64-static "$data/seekless-arm64" pwned check 2>&1) \
            || fail "the arm64 image's seekless failed under qemu: $got"
        [ "$got" = "$expected" ] || fail "the arm64 image's seekless answered '$got', the amd64 one '$expected'"
        say "the arm64 image's /seekless under qemu-aarch64-static: pwned check answers as amd64's"
    else
        say "SKIPPED running the arm64 image's binary: qemu-aarch64-static is not installed"
    fi

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

check_kubernetes
