# Wine for the checks that run Windows programs (scripts/check-platforms.sh,
# scripts/test-emulated.sh): sourced, not run.
#
# wine_setup PREFIX_DEFAULT: finds Wine (sets `wine` and `wineserver_cmd`),
# exports WINEPREFIX (PREFIX_DEFAULT unless already set), quiet debug
# output and no Mono or Gecko installer, and makes the prefix once. On
# failure, sets `reason` and returns 1.
#
# wine_prng EXE DIR: when EXE does not start under this Wine, puts the
# stand-in bcryptprimitives.dll (bcryptprimitives.c beside this file) in
# DIR, the directory EXE (and any other program run from there) loads DLLs
# from. Rust's std needs ProcessPrng from that DLL, which Wine before 9
# lacks. For these checks only: nothing that ships carries it. Sets
# `reason` and returns 1 when EXE cannot be made to start.

wine=
wineserver_cmd=
wine_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

wine_setup() {
    local candidate
    for candidate in /usr/lib/wine/wine64 wine64 wine; do
        if command -v "$candidate" >/dev/null; then
            wine=$(command -v "$candidate")
            break
        fi
    done
    if [ -z "$wine" ]; then
        reason="Wine is not installed (Debian: apt-get install wine wine64)"
        return 1
    fi
    for candidate in /usr/lib/wine/wineserver64 wineserver; do
        if command -v "$candidate" >/dev/null; then
            wineserver_cmd=$(command -v "$candidate")
            break
        fi
    done
    export WINEPREFIX=${WINEPREFIX:-$1}
    export WINEDEBUG=-all
    export WINEDLLOVERRIDES="mscoree,mshtml="
    if [ ! -d "$WINEPREFIX/drive_c" ]; then
        echo "wine: making the prefix $WINEPREFIX (once)" >&2
        mkdir -p "$WINEPREFIX"
        "$wine" wineboot -i >/dev/null 2>&1 || true
        [ -d "$WINEPREFIX/drive_c" ] || {
            reason="wineboot -i made no prefix in $WINEPREFIX"
            return 1
        }
    fi
}

wine_prng() {
    local exe=$1 dir=$2
    "$wine" "$exe" --help >/dev/null 2>&1 && return 0
    if ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
        reason="$(basename "$exe") does not start under this Wine (no ProcessPrng?) and x86_64-w64-mingw32-gcc, to build the stand-in for it, is not installed"
        return 1
    fi
    x86_64-w64-mingw32-gcc -shared -O2 -o "$dir/bcryptprimitives.dll" \
        "$wine_dir/bcryptprimitives.c" -ladvapi32
    echo "wine: no ProcessPrng in this Wine: the stand-in bcryptprimitives.dll (scripts/wine/) is in $dir" >&2
    "$wine" "$exe" --help >/dev/null 2>&1 && return 0
    reason="$(basename "$exe") does not start under Wine even with the stand-in bcryptprimitives.dll"
    return 1
}
