#!/usr/bin/env bash
# Load benchmark of `seekless pwned serve` against nginx serving the same
# ranges as static per-range files (00000.txt …, the way HIBP's downloader
# writes them), side by side in one run, with wrk on 127.0.0.1.
#
# Data: RANGES ranges (every 2^20/RANGES-th prefix) of PER_RANGE random
# SHA-1 suffixes each, like the real corpus (~1,000 hashes a range); the
# index is built from the per-range files nginx serves, so both answer
# the same bytes (checked before measuring).
#
# Needs: wrk and nginx (Debian: apt-get install wrk nginx-light), python3.
# Usage: scripts/bench-pwned-serve.sh [RANGES] [PER_RANGE] [SECONDS]
# Servers: seekless (no cache), seekless+cache (--cache-mib CACHE_MIB,
# default 256: holds every range of the default data) and nginx; the
# cached run shows the ceiling when ranges repeat, the uncached one the
# cost of answering every range from the index.
# Environment: CONNECTIONS (default 64), WRK_THREADS (default 2),
# SERVER_THREADS (default 2), PAIRS (default 5: uncached identity against
# nginx measured again in that many pairs in turn, median ratio reported;
# 0 skips it), KEEP=1 keeps the work directory.
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
CACHE_MIB=${CACHE_MIB:-256}
PAIRS=${PAIRS:-5}

for tool in wrk nginx python3; do
    command -v "$tool" >/dev/null || { echo "bench: $tool is not installed" >&2; exit 2; }
done

target=${CARGO_TARGET_DIR:-target}
cargo build --release --quiet -p seekless --no-default-features --features serve
seekless=$target/release/seekless

work=$(mktemp -d /tmp/seekless-serve-bench.XXXXXX)
chmod 755 "$work" # nginx workers run as another user
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid")" 2>/dev/null || true
    sleep 0.5
    [ "${KEEP:-0}" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT

echo "== data: $RANGES ranges x $PER_RANGE hashes in $work"
python3 - "$work/ranges" "$RANGES" "$PER_RANGE" <<'EOF'
import os, random, sys
out, ranges, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out)
rng = random.Random(20)
step = (1 << 20) // ranges
with open(os.path.join(os.path.dirname(out), "prefixes.txt"), "w") as p:
    for r in range(ranges):
        prefix = "%05X" % (r * step)
        p.write(prefix + "\n")
        suffixes = sorted({"%035X" % rng.getrandbits(140) for _ in range(per)})
        # Counts skewed like the corpus: most small, a few huge.
        lines = ["%s:%d" % (s, max(1, int(rng.paretovariate(1.1)))) for s in suffixes]
        with open(os.path.join(out, prefix + ".txt"), "w", newline="") as f:
            f.write("\r\n".join(lines))
EOF
"$seekless" pwned prepare "$work/ranges" -o "$work/pwned.idx" | sed 's/^/   /'
index_bytes=$(stat -c %s "$work/pwned.idx")
files_bytes=$(du -sb "$work/ranges" | cut -f1)
files_disk=$(du -sB1 "$work/ranges" | cut -f1)
echo "   index $index_bytes bytes; range files $files_bytes bytes of text ($files_disk on disk)"

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
    server {
        listen 127.0.0.1:$NGINX_PORT;
        location ~ "^/range/([0-9A-F]{5})\$" {
            default_type text/plain;
            alias $work/ranges/\$1.txt;
        }
    }
}
EOF
nginx -c "$work/nginx.conf" -p "$work"
"$seekless" pwned serve -i "$work/pwned.idx" --listen "127.0.0.1:$SEEKLESS_PORT" \
    --threads "$SERVER_THREADS" >"$work/serve.out" 2>"$work/serve.err" &
seekless_pid=$!
pids+=("$seekless_pid")
"$seekless" pwned serve -i "$work/pwned.idx" --listen "127.0.0.1:$CACHED_PORT" \
    --threads "$SERVER_THREADS" --cache-mib "$CACHE_MIB" >"$work/cached.out" 2>"$work/cached.err" &
cached_pid=$!
pids+=("$cached_pid")
for port in "$SEEKLESS_PORT" "$CACHED_PORT"; do
    for _ in $(seq 1 100); do
        curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
        sleep 0.1
    done
done

echo "== check: both answer the same bytes"
for prefix in $(shuf -n 20 --random-source=<(yes) "$work/prefixes.txt"); do
    for port in "$SEEKLESS_PORT" "$CACHED_PORT"; do
        cmp -s <(curl -sf "http://127.0.0.1:$port/range/$prefix") \
            <(curl -sf "http://127.0.0.1:$NGINX_PORT/range/$prefix") \
            || { echo "bench: range $prefix differs" >&2; exit 1; }
    done
done

cat >"$work/ranges.lua" <<EOF
local prefixes = {}
for line in io.lines("$work/prefixes.txt") do prefixes[#prefixes + 1] = line end
local encoding = os.getenv("BENCH_ENCODING")
request = function()
    local path = "/range/" .. prefixes[math.random(#prefixes)]
    if encoding and encoding ~= "" then
        return wrk.format("GET", path, { ["Accept-Encoding"] = encoding })
    end
    return wrk.format("GET", path)
end
done = function(summary, latency, requests)
    io.write(string.format("RESULT %.0f %.3f %.3f %d %d %d\n",
        summary.requests / (summary.duration / 1e6),
        latency:percentile(50) / 1000, latency:percentile(99) / 1000,
        summary.errors.connect + summary.errors.read + summary.errors.write
            + summary.errors.timeout, summary.errors.status, summary.bytes))
end
EOF

rss_kib() { # private (anonymous) resident memory of processes, in KiB:
    # the index's and the files' pages are page cache, shared, not counted
    local total=0
    for pid in "$@"; do
        total=$((total + $(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)))
    done
    echo "$total"
}
nginx_pids() { pgrep -P "$(cat "$work/nginx.pid")"; cat "$work/nginx.pid"; }

# Warm-up: each range's validator (a SHA-1 of its content) is computed on
# its first request and kept; every range is asked once before measuring,
# so no measured run pays for them.
for port in "$SEEKLESS_PORT" "$CACHED_PORT"; do
    sed "s|^|http://127.0.0.1:$port/range/|" "$work/prefixes.txt" | xargs -P 4 -n 64 curl -sf >/dev/null
done

echo "== load: wrk -t$WRK_THREADS -c$CONNECTIONS -d${SECONDS_EACH}s, keep-alive, random ranges of the $RANGES"
echo "   private memory before: seekless $(rss_kib "$seekless_pid") KiB, seekless+cache $(rss_kib "$cached_pid") KiB, nginx $(rss_kib $(nginx_pids)) KiB"
printf "%-15s %-9s %10s %9s %9s %7s %12s %10s\n" server encoding "req/s" "p50 ms" "p99 ms" errors "MB/s" "anon MiB"
declare -A rps
for encoding in identity gzip br; do
    for server in seekless seekless+cache nginx; do
        if [ "$server" = nginx ] && [ "$encoding" = br ]; then
            continue # Debian's nginx has no brotli module
        fi
        case $server in
            seekless) port=$SEEKLESS_PORT pid=$seekless_pid ;;
            seekless+cache) port=$CACHED_PORT pid=$cached_pid ;;
            nginx) port=$NGINX_PORT ;;
        esac
        line=$(BENCH_ENCODING=$encoding wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${SECONDS_EACH}s" \
            --timeout 5s -s "$work/ranges.lua" "http://127.0.0.1:$port/" | grep '^RESULT')
        read -r _ req p50 p99 errors status bytes <<<"$line"
        if [ "$server" = nginx ]; then rss=$(rss_kib $(nginx_pids)); else rss=$(rss_kib "$pid"); fi
        rps[$server-$encoding]=$req
        printf "%-15s %-9s %10s %9s %9s %7s %12.1f %10.1f\n" "$server" "$encoding" "$req" "$p50" "$p99" \
            "$((errors + status))" "$(echo "$bytes / $SECONDS_EACH / 1048576" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
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
# One run each is at the mercy of the host's noise (on a shared 2-core VM
# the same pair of runs moves by 10%): uncached identity, the figure that
# decides against nginx, is measured again in PAIRS pairs in turn, the
# order swapped every pair, and the median ratio reported.
if [ "$PAIRS" -gt 0 ]; then
    echo "== identity uncached against nginx, $PAIRS pairs in turn (${SECONDS_EACH}s each)"
    ratios=()
    for pair in $(seq 1 "$PAIRS"); do
        order="$SEEKLESS_PORT $NGINX_PORT"
        [ $((pair % 2)) = 0 ] && order="$NGINX_PORT $SEEKLESS_PORT"
        declare -A got
        for port in $order; do
            line=$(wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${SECONDS_EACH}s" --timeout 5s \
                -s "$work/ranges.lua" "http://127.0.0.1:$port/" | grep '^RESULT')
            read -r _ req _ p99 errors status _ <<<"$line"
            got[$port]="$req $p99 $((errors + status))"
        done
        read -r ours our_p99 our_errors <<<"${got[$SEEKLESS_PORT]}"
        read -r theirs their_p99 their_errors <<<"${got[$NGINX_PORT]}"
        ratio=$(echo "$ours / $theirs" | bc -l)
        ratios+=("$ratio")
        printf "   pair %d: seekless %s req/s (p99 %s ms, %s errors), nginx %s (p99 %s ms, %s errors): %.2f\n" \
            "$pair" "$ours" "$our_p99" "$our_errors" "$theirs" "$their_p99" "$their_errors" "$ratio"
    done
    printf "identity uncached over nginx, median of %d pairs: %.2f (pairs %s)\n" "$PAIRS" \
        "$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')" \
        "$(printf '%.2f ' "${ratios[@]}" | sed 's/ $//')"
fi
echo "== versions"
"$seekless" --version
nginx -v 2>&1
wrk --version 2>&1 | head -1 || true
