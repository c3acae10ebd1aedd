#!/usr/bin/env bash
# Load benchmark of `seekless pwned serve` against nginx serving the same
# ranges as static per-range files (00000.txt …, the way HIBP's downloader
# writes them), side by side in one run, with wrk and h2load on 127.0.0.1.
# nginx is configured twice, as operators do: compressing gzip answers on
# the fly (`gzip on`), and sending files pre-compressed with `gzip -6`
# (`gzip_static on`, `http2` on its TLS port); serve answers gzip from the
# index's gzip ranges file (`pwned gzip-ranges`), the cached server from a
# link to the index without one (compressing on the fly, into its cache).
#
# Data: RANGES ranges (every 2^20/RANGES-th prefix) of PER_RANGE random
# hashes each (KIND=sha1, or ntlm), like the real corpus (~1,000 hashes a
# range); the index is built from the per-range files nginx serves, so
# both answer the same bytes (checked before measuring).
#
# Needs: wrk, h2load, nginx (Debian: apt-get install wrk nghttp2-client
# nginx-light), python3, openssl, curl, gzip.
# Usage: scripts/bench-pwned-serve.sh [RANGES] [PER_RANGE] [SECONDS]
#
# Sections (SECTIONS, default all, in this order):
#   load        identity, gzip and br, uncached and cached, against nginx
#               (on the fly and gzip_static)
#   pairs       identity uncached against nginx, PAIRS pairs in turn,
#               median ratio (plain HTTP, /metrics on as by default)
#   gzip        gzip (from the gzip ranges file) against nginx
#               `gzip_static`, PAIRS pairs in turn, HTTP/1.1
#   h2          HTTPS with HTTP/2 (h2load, H2_CLIENTS connections x
#               H2_STREAMS streams), gzip then identity, against nginx
#               `http2` + `gzip_static`, PAIRS pairs in turn
#   https       the same over HTTPS against nginx with the same
#               certificate (TLS 1.3, keep-alive), PAIRS pairs in turn
#   handshakes  new HTTPS connections a second (a connection a request)
#   check       GET /check/sha1/… (or ntlm) with random listed hashes,
#               keep-alive; nginx answering a constant body of the same
#               length is the machine's ceiling for wrk and a server here
#   batch       POST /check with 10,000 hashes a request: hashes a second
# Environment: CONNECTIONS (default 64), WRK_THREADS (default 2),
# SERVER_THREADS (default 2), PAIRS (default 5), KIND (sha1 or ntlm),
# H2_CLIENTS (default 16), H2_STREAMS (default 10),
# PORTABLE=1 (serve without AVX-512: SEEKLESS_NO_AVX512=1), KEEP=1 keeps
# the work directory.
set -euo pipefail
cd "$(dirname "$0")/.."

RANGES=${1:-4096}
PER_RANGE=${2:-1000}
SECONDS_EACH=${3:-10}
CONNECTIONS=${CONNECTIONS:-64}
WRK_THREADS=${WRK_THREADS:-2}
SERVER_THREADS=${SERVER_THREADS:-2}
SEEKLESS_PORT=${SEEKLESS_PORT:-18080}
NGINX_PORT=${NGINX_PORT:-18081}
CACHED_PORT=${CACHED_PORT:-18082}
NGINX_STATIC_PORT=${NGINX_STATIC_PORT:-18083}
NGINX_STATIC_TLS_PORT=${NGINX_STATIC_TLS_PORT:-18445}
H2_CLIENTS=${H2_CLIENTS:-16}
H2_STREAMS=${H2_STREAMS:-10}
SEEKLESS_TLS_PORT=${SEEKLESS_TLS_PORT:-18443}
NGINX_TLS_PORT=${NGINX_TLS_PORT:-18444}
CACHE_MIB=${CACHE_MIB:-256}
PAIRS=${PAIRS:-5}
KIND=${KIND:-sha1}
SECTIONS=${SECTIONS:-load pairs gzip h2 https handshakes check batch}

for tool in wrk h2load nginx python3 openssl curl gzip; do
    command -v "$tool" >/dev/null || { echo "bench: $tool is not installed" >&2; exit 2; }
done
case $KIND in
    sha1) hex_len=40 mode= ;;
    ntlm) hex_len=32 mode='?mode=ntlm' ;;
    *) echo "bench: KIND is sha1 or ntlm" >&2; exit 2 ;;
esac
wants() { [[ " $SECTIONS " == *" $1 "* ]]; }

# The full binary (the default features), the one the user's own `cargo
# build --release` makes, where it puts it: a build with fewer features
# there would replace it with one that lacks commands. Its path is cargo's
# own answer (CARGO_TARGET_DIR, build.target-dir, build.target included).
seekless=$(cargo build --release --quiet -p seekless --bin seekless \
    --message-format json-render-diagnostics \
    | sed -n 's|.*"executable":"\([^"]*/seekless\)".*|\1|p' | tail -n1)
[ -x "$seekless" ] || { echo "bench: cargo build gave no seekless binary" >&2; exit 1; }
serve_env=()
[ "${PORTABLE:-0}" = 1 ] && serve_env=(env SEEKLESS_NO_AVX512=1)

work=$(mktemp -d /tmp/seekless-serve-bench.XXXXXX)
chmod 755 "$work" # nginx workers run as another user
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    if [ -f "$work/nginx.pid" ]; then kill "$(cat "$work/nginx.pid")" 2>/dev/null || true; fi
    sleep 0.5
    [ "${KEEP:-0}" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT

echo "== data: $RANGES ranges x $PER_RANGE $KIND hashes in $work"
python3 - "$work" "$RANGES" "$PER_RANGE" "$hex_len" <<'EOF'
import os, random, sys
work, ranges, per, hex_len = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
out = os.path.join(work, "ranges")
os.makedirs(out)
rng = random.Random(20)
step = (1 << 20) // ranges
bits = 4 * (hex_len - 5)
suffix = "%0" + str(hex_len - 5) + "X"
listed = []
with open(os.path.join(work, "prefixes.txt"), "w") as p:
    for r in range(ranges):
        prefix = "%05X" % (r * step)
        p.write(prefix + "\n")
        suffixes = sorted({suffix % rng.getrandbits(bits) for _ in range(per)})
        # Counts skewed like the corpus: most small, a few huge.
        lines = ["%s:%d" % (s, max(1, int(rng.paretovariate(1.1)))) for s in suffixes]
        with open(os.path.join(out, prefix + ".txt"), "w", newline="") as f:
            f.write("\r\n".join(lines))
        listed.extend(prefix + s for s in rng.sample(suffixes, min(len(suffixes), 25)))
rng.shuffle(listed)
with open(os.path.join(work, "hashes.txt"), "w") as h:
    h.write("\n".join(listed[:100000]) + "\n")
EOF
"$seekless" pwned prepare "$work/ranges" -o "$work/pwned.idx" | sed 's/^/   /'
index_bytes=$(stat -c %s "$work/pwned.idx")
files_bytes=$(du -sb "$work/ranges" | cut -f1)
files_disk=$(du -sB1 "$work/ranges" | cut -f1)
echo "   index $index_bytes bytes; range files $files_bytes bytes of text ($files_disk on disk)"
# What each side keeps for gzip answers: serve's gzip ranges file (every
# range of the index, compressed once), nginx's FILE.txt.gz beside each
# file (gzip -6, as `gzip_static` wants them).
"$seekless" pwned gzip-ranges "$work/pwned.idx" --threads "$SERVER_THREADS" | sed 's/^/   /'
ln "$work/pwned.idx" "$work/cached.idx"
started=$(date +%s.%N)
find "$work/ranges" -name '*.txt' -print0 | xargs -0 -P "$SERVER_THREADS" -n 256 gzip -6 -k
gz_seconds=$(echo "$(date +%s.%N) - $started" | bc -l)
gz_bytes=$(find "$work/ranges" -name '*.gz' -print0 | du -cb --files0-from=- | tail -n1 | cut -f1)
printf "   gzip -6 -k of the range files: %s bytes in %.1f s\n" "$gz_bytes" "$gz_seconds"

# One certificate for both servers (ECDSA P-256, as a modern CA issues).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
chmod 644 "$work/key.pem"
check_body=$(printf '{"hash":"%s","count":1}' "$(printf '%*s' "$hex_len" '' | tr ' ' 0)")

cat >"$work/nginx.conf" <<EOF
worker_processes $SERVER_THREADS;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    keepalive_timeout 65;
    gzip on;
    gzip_types text/plain;
    gzip_min_length 32;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    server {
        listen 127.0.0.1:$NGINX_PORT;
        listen 127.0.0.1:$NGINX_TLS_PORT ssl;
        location ~ "^/range/([0-9A-F]{5})\$" {
            default_type text/plain;
            alias $work/ranges/\$1.txt;
        }
        # The ceiling of a tiny answer for wrk and a server on these cores.
        location /check/ {
            default_type application/json;
            return 200 '$check_body';
        }
    }
    # As a mirror of per-range files is deployed: pre-compressed files
    # sent as they are, HTTP/2 on TLS.
    server {
        listen 127.0.0.1:$NGINX_STATIC_PORT;
        listen 127.0.0.1:$NGINX_STATIC_TLS_PORT ssl http2;
        gzip off;
        gzip_static on;
        location ~ "^/range/([0-9A-F]{5})\$" {
            default_type text/plain;
            alias $work/ranges/\$1.txt;
        }
    }
}
EOF
nginx -c "$work/nginx.conf" -p "$work"
"${serve_env[@]}" "$seekless" pwned serve -i "$work/pwned.idx" --listen "127.0.0.1:$SEEKLESS_PORT" \
    --tls-listen "127.0.0.1:$SEEKLESS_TLS_PORT" --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" \
    --threads "$SERVER_THREADS" >"$work/serve.out" 2>"$work/serve.err" &
seekless_pid=$!
pids+=("$seekless_pid")
"${serve_env[@]}" "$seekless" pwned serve -i "$work/cached.idx" --listen "127.0.0.1:$CACHED_PORT" \
    --threads "$SERVER_THREADS" --cache-mib "$CACHE_MIB" >"$work/cached.out" 2>"$work/cached.err" &
cached_pid=$!
pids+=("$cached_pid")
for port in "$SEEKLESS_PORT" "$CACHED_PORT"; do
    for _ in $(seq 1 600); do
        curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
        sleep 0.1
    done
done

echo "== check: both answer the same bytes, over HTTP and HTTPS"
tls=(--cacert "$work/cert.pem" --resolve "localhost:$SEEKLESS_TLS_PORT:127.0.0.1" \
    --resolve "localhost:$NGINX_TLS_PORT:127.0.0.1")
for prefix in $(shuf -n 20 --random-source=<(yes) "$work/prefixes.txt"); do
    want=$work/want.txt
    curl -sf "http://127.0.0.1:$NGINX_PORT/range/$prefix" >"$want"
    for url in "http://127.0.0.1:$SEEKLESS_PORT/range/$prefix$mode" \
        "http://127.0.0.1:$CACHED_PORT/range/$prefix$mode" \
        "https://localhost:$SEEKLESS_TLS_PORT/range/$prefix$mode" \
        "https://localhost:$NGINX_TLS_PORT/range/$prefix"; do
        cmp -s <(curl -sf "${tls[@]}" "$url") "$want" \
            || { echo "bench: $url differs from nginx's" >&2; exit 1; }
    done
    # gzip, inflated, over HTTP/1.1 and HTTP/2: the same bytes again.
    for url in "http://127.0.0.1:$SEEKLESS_PORT/range/$prefix$mode" \
        "http://127.0.0.1:$CACHED_PORT/range/$prefix$mode" \
        "http://127.0.0.1:$NGINX_STATIC_PORT/range/$prefix" \
        "https://localhost:$SEEKLESS_TLS_PORT/range/$prefix$mode" \
        "https://localhost:$NGINX_STATIC_TLS_PORT/range/$prefix"; do
        headers=$work/headers.txt
        cmp -s <(curl -sf "${tls[@]}" --resolve "localhost:$NGINX_STATIC_TLS_PORT:127.0.0.1" \
            -H 'Accept-Encoding: gzip' -D "$headers" "$url" | gzip -dc) "$want" \
            && grep -qi '^content-encoding: gzip' "$headers" \
            || { echo "bench: gzip from $url differs from nginx's identity" >&2; exit 1; }
        case $url in https*) grep -q '^HTTP/2 ' "$headers" \
            || { echo "bench: $url did not answer over HTTP/2" >&2; exit 1; } ;; esac
    done
done

cat >"$work/ranges.lua" <<EOF
local prefixes = {}
for line in io.lines("$work/prefixes.txt") do prefixes[#prefixes + 1] = line end
local encoding = os.getenv("BENCH_ENCODING")
local close = os.getenv("BENCH_CLOSE")
request = function()
    local path = "/range/" .. prefixes[math.random(#prefixes)] .. "$mode"
    local headers = {}
    if encoding and encoding ~= "" then headers["Accept-Encoding"] = encoding end
    if close and close ~= "" then headers["Connection"] = "close" end
    return wrk.format("GET", path, headers)
end
EOF
# Requests made once, in init: a random one a call, so that wrk's own Lua
# (which shares the two cores) costs as little as it can.
cat >"$work/check.lua" <<EOF
local requests, n = {}, 0
init = function(args)
    for line in io.lines("$work/hashes.txt") do
        n = n + 1
        requests[n] = wrk.format("GET", "/check/$KIND/" .. line)
    end
end
request = function() return requests[math.random(n)] end
EOF
# Bodies of 10,000 hashes: half listed, half random.
python3 - "$work" "$hex_len" <<'EOF'
import json, os, random, sys
work, hex_len = sys.argv[1], int(sys.argv[2])
listed = open(os.path.join(work, "hashes.txt")).read().split()
rng = random.Random(7)
bodies = []
for _ in range(20):
    batch = [rng.choice(listed) if i % 2 == 0 else "%0*X" % (hex_len, rng.getrandbits(4 * hex_len))
             for i in range(10000)]
    bodies.append(json.dumps(batch))
with open(os.path.join(work, "bodies.lua"), "w") as f:
    f.write("return {\n" + ",\n".join("[=[" + b + "]=]" for b in bodies) + "\n}\n")
EOF
cat >"$work/batch.lua" <<EOF
local requests, n = {}, 0
init = function(args)
    for _, body in ipairs(dofile("$work/bodies.lua")) do
        n = n + 1
        requests[n] = wrk.format("POST", "/check", { ["Content-Type"] = "application/json" }, body)
    end
end
request = function() return requests[math.random(n)] end
EOF
cat >"$work/report.lua" <<'EOF'
done = function(summary, latency, requests)
    io.write(string.format("RESULT %.0f %.3f %.3f %d %d %d\n",
        summary.requests / (summary.duration / 1e6),
        latency:percentile(50) / 1000, latency:percentile(99) / 1000,
        summary.errors.connect + summary.errors.read + summary.errors.write
            + summary.errors.timeout, summary.errors.status, summary.bytes))
end
EOF
for script in ranges check batch; do cat "$work/report.lua" >>"$work/$script.lua"; done

# wrk against URL with SCRIPT: "req/s p50 p99 errors bytes".
load() {
    local script=$1 url=$2 line
    line=$(wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${SECONDS_EACH}s" --timeout 5s \
        -s "$work/$script.lua" "$url" | grep '^RESULT')
    read -r _ req p50 p99 errors status bytes <<<"$line"
    echo "$req $p50 $p99 $((errors + status)) $bytes"
}
rss_kib() { # private (anonymous) resident memory of processes, in KiB:
    # the index's and the files' pages are page cache, shared, not counted
    local total=0
    for pid in "$@"; do
        total=$((total + $(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)))
    done
    echo "$total"
}
nginx_rss_kib() { # nginx's master and workers
    local master
    master=$(cat "$work/nginx.pid")
    # shellcheck disable=SC2046 # one argument a process id
    rss_kib "$master" $(pgrep -P "$master")
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# PAIRS pairs in turn of SCRIPT against our URL and nginx's, the order
# swapped every pair; prints each pair and the median ratio.
pairs() {
    local what=$1 script=$2 ours_url=$3 theirs_url=$4
    echo "== $what, $PAIRS pairs in turn (${SECONDS_EACH}s each)"
    local ratios=() pair ours theirs
    for pair in $(seq 1 "$PAIRS"); do
        if [ $((pair % 2)) = 1 ]; then
            ours=$(load "$script" "$ours_url"); theirs=$(load "$script" "$theirs_url")
        else
            theirs=$(load "$script" "$theirs_url"); ours=$(load "$script" "$ours_url")
        fi
        read -r our_req _ our_p99 our_errors _ <<<"$ours"
        read -r their_req _ their_p99 their_errors _ <<<"$theirs"
        ratios+=("$(echo "$our_req / $their_req" | bc -l)")
        printf "   pair %d: seekless %s req/s (p99 %s ms, %s errors), nginx %s (p99 %s ms, %s errors): %.2f\n" \
            "$pair" "$our_req" "$our_p99" "$our_errors" "$their_req" "$their_p99" "$their_errors" \
            "${ratios[-1]}"
    done
    printf "%s over nginx, median of %d pairs: %.2f (pairs %s)\n" "$what" "$PAIRS" \
        "$(printf '%s\n' "${ratios[@]}" | median)" "$(printf '%.2f ' "${ratios[@]}" | sed 's/ $//')"
}

# h2load over HTTPS with HTTP/2 against BASE (https://127.0.0.1:PORT),
# asking for ENCODING (gzip or identity), random ranges of the RANGES
# (QUERY after each path): "req/s failed".
h2run() {
    local base=$1 encoding=$2 query=$3 uris=$work/h2-uris.txt line rate failed
    python3 -c 'import random, sys
p = open(sys.argv[1]).read().split()
r = random.Random(3)
print("\n".join(sys.argv[2] + "/range/" + r.choice(p) + sys.argv[3] for _ in range(20000)))' \
        "$work/prefixes.txt" "$base" "$query" >"$uris"
    local header=()
    [ "$encoding" = gzip ] && header=(-H 'accept-encoding: gzip')
    line=$(h2load -c "$H2_CLIENTS" -m "$H2_STREAMS" -t "$WRK_THREADS" -D "$SECONDS_EACH" \
        --warm-up-time=1 "${header[@]}" -i "$uris" 2>&1)
    rate=$(sed -n 's/^finished in [^,]*, \([0-9.]*\) req\/s.*/\1/p' <<<"$line")
    failed=$(sed -n 's/^requests: .* \([0-9]*\) failed, \([0-9]*\) errored.*/\1 \2/p' <<<"$line")
    [ -n "$rate" ] || { echo "bench: h2load gave no rate: $line" >&2; exit 1; }
    echo "$rate $(( ${failed% *} + ${failed#* } ))"
}

# PAIRS pairs in turn of h2load asking for ENCODING from serve's TLS
# address and nginx's `http2` + `gzip_static` one; the median ratio.
h2pairs() {
    local encoding=$1 ratios=() pair ours theirs
    local ours_base=https://127.0.0.1:$SEEKLESS_TLS_PORT theirs_base=https://127.0.0.1:$NGINX_STATIC_TLS_PORT
    echo "== HTTPS HTTP/2 $encoding, h2load -c$H2_CLIENTS -m$H2_STREAMS, $PAIRS pairs in turn (${SECONDS_EACH}s each)"
    for pair in $(seq 1 "$PAIRS"); do
        if [ $((pair % 2)) = 1 ]; then
            ours=$(h2run "$ours_base" "$encoding" "$mode"); theirs=$(h2run "$theirs_base" "$encoding" "")
        else
            theirs=$(h2run "$theirs_base" "$encoding" ""); ours=$(h2run "$ours_base" "$encoding" "$mode")
        fi
        ratios+=("$(echo "${ours% *} / ${theirs% *}" | bc -l)")
        printf "   pair %d: seekless %s req/s (%s failed), nginx %s (%s failed): %.2f\n" \
            "$pair" "${ours% *}" "${ours#* }" "${theirs% *}" "${theirs#* }" "${ratios[-1]}"
    done
    printf "HTTPS HTTP/2 %s over nginx http2 + gzip_static, median of %d pairs: %.2f (pairs %s)\n" \
        "$encoding" "$PAIRS" "$(printf '%s\n' "${ratios[@]}" | median)" \
        "$(printf '%.2f ' "${ratios[@]}" | sed 's/ $//')"
}

# Warm-up: each range's validator (a SHA-1 of its content) is computed on
# its first request and kept; every range is asked once before measuring,
# so no measured run pays for them.
# The gzip members are checked against their checksums the first time
# too: asked once as well, as nginx's files are read once by the checks.
for port in "$SEEKLESS_PORT" "$CACHED_PORT"; do
    for encoding in identity gzip; do
        sed "s|^|http://127.0.0.1:$port/range/|; s|\$|$mode|" "$work/prefixes.txt" \
            | xargs -P 4 -n 64 curl -sf -H "Accept-Encoding: $encoding" >/dev/null
    done
done

echo "== wrk -t$WRK_THREADS -c$CONNECTIONS -d${SECONDS_EACH}s, keep-alive unless said, random ranges of the $RANGES"
if wants load; then
    echo "   private memory before: seekless $(rss_kib "$seekless_pid") KiB, seekless+cache $(rss_kib "$cached_pid") KiB, nginx $(nginx_rss_kib) KiB"
    printf "%-15s %-9s %10s %9s %9s %7s %12s %10s\n" server encoding "req/s" "p50 ms" "p99 ms" errors "MB/s" "anon MiB"
    declare -A rps
    for encoding in identity gzip br; do
        for server in seekless seekless+cache nginx nginx-static; do
            if [[ $server == nginx* && $encoding == br ]]; then
                continue # Debian's nginx has no brotli module
            fi
            if [[ $server == nginx-static && $encoding == identity ]]; then
                continue # the same files by sendfile as the other
            fi
            case $server in
                seekless) port=$SEEKLESS_PORT pid=$seekless_pid ;;
                seekless+cache) port=$CACHED_PORT pid=$cached_pid ;;
                nginx*) port=$NGINX_PORT ;;
            esac
            [ "$server" = nginx-static ] && port=$NGINX_STATIC_PORT
            read -r req p50 p99 errors bytes <<<"$(BENCH_ENCODING=$encoding load ranges "http://127.0.0.1:$port/")"
            if [[ $server == nginx* ]]; then rss=$(nginx_rss_kib); else rss=$(rss_kib "$pid"); fi
            rps[$server-$encoding]=$req
            printf "%-15s %-9s %10s %9s %9s %7s %12.1f %10.1f\n" "$server" "$encoding" "$req" "$p50" "$p99" \
                "$errors" "$(echo "$bytes / $SECONDS_EACH / 1048576" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
        done
    done
    echo "== ratios (req/s over nginx's; br over nginx's gzip, as nginx has no brotli)"
    for encoding in identity gzip br; do
        theirs=$encoding
        [ "$encoding" = br ] && theirs=gzip
        printf "%-9s seekless %.2f, seekless+cache %.2f\n" "$encoding" \
            "$(echo "${rps[seekless-$encoding]} / ${rps[nginx-$theirs]}" | bc -l)" \
            "$(echo "${rps[seekless+cache-$encoding]} / ${rps[nginx-$theirs]}" | bc -l)"
    done
    printf "%-9s seekless %.2f, seekless+cache %.2f over nginx gzip_static\n" gzip \
        "$(echo "${rps[seekless-gzip]} / ${rps[nginx-static-gzip]}" | bc -l)" \
        "$(echo "${rps[seekless+cache-gzip]} / ${rps[nginx-static-gzip]}" | bc -l)"
fi
# One run each is at the mercy of the host's noise (on a shared 2-core VM
# the same pair of runs moves by 10%): the figures that decide against
# nginx are measured in PAIRS pairs in turn and the median ratio reported.
if wants pairs && [ "$PAIRS" -gt 0 ]; then
    pairs "identity uncached" ranges "http://127.0.0.1:$SEEKLESS_PORT/" "http://127.0.0.1:$NGINX_PORT/"
fi
if wants gzip && [ "$PAIRS" -gt 0 ]; then
    BENCH_ENCODING=gzip pairs "gzip uncached against gzip_static" ranges \
        "http://127.0.0.1:$SEEKLESS_PORT/" "http://127.0.0.1:$NGINX_STATIC_PORT/"
fi
if wants h2 && [ "$PAIRS" -gt 0 ]; then
    h2pairs gzip
    h2pairs identity
fi
if wants https && [ "$PAIRS" -gt 0 ]; then
    pairs "HTTPS identity uncached" ranges "https://127.0.0.1:$SEEKLESS_TLS_PORT/" \
        "https://127.0.0.1:$NGINX_TLS_PORT/"
fi
if wants handshakes; then
    echo "== new HTTPS connections a second (Connection: close: a TLS handshake a request)"
    for server in seekless nginx seekless nginx; do
        port=$SEEKLESS_TLS_PORT
        [ "$server" = nginx ] && port=$NGINX_TLS_PORT
        read -r req _ p99 errors _ <<<"$(BENCH_CLOSE=1 load ranges "https://127.0.0.1:$port/")"
        printf "   %-9s %8s connections/s (p99 %s ms, %s errors)\n" "$server" "$req" "$p99" "$errors"
    done
    echo "   (TLS: $(echo | openssl s_client -connect "127.0.0.1:$SEEKLESS_TLS_PORT" 2>/dev/null \
        | grep -m1 -E '^New,|Protocol' | tr -s ' ' || true))"
fi
if wants check; then
    echo "== GET /check/$KIND/{hash}, random listed hashes, keep-alive"
    for server in seekless nginx-constant seekless nginx-constant; do
        port=$SEEKLESS_PORT
        [ "$server" = nginx-constant ] && port=$NGINX_PORT
        read -r req p50 p99 errors _ <<<"$(load check "http://127.0.0.1:$port/")"
        printf "   %-15s %8s req/s (p50 %s ms, p99 %s ms, %s errors)\n" "$server" "$req" "$p50" "$p99" "$errors"
    done
fi
if wants batch; then
    echo "== POST /check, 10,000 hashes a request (half listed), keep-alive"
    for connections in 2 8; do
        line=$(wrk -t"$WRK_THREADS" -c"$connections" -d"${SECONDS_EACH}s" --timeout 5s \
            -s "$work/batch.lua" "http://127.0.0.1:$SEEKLESS_PORT/" | grep '^RESULT')
        read -r _ req p50 p99 errors status _ <<<"$line"
        printf "   %d connections: %s requests/s, %.2f M hashes/s (p50 %s ms, p99 %s ms, %s errors)\n" \
            "$connections" "$req" "$(echo "$req * 10000 / 1000000" | bc -l)" "$p50" "$p99" "$((errors + status))"
    done
fi
echo "== versions"
"$seekless" --version
nginx -v 2>&1
wrk --version 2>&1 | head -1 || true
h2load --version 2>&1 | head -1
openssl version
