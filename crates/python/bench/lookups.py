"""Lookups per second from Python: seekless against pwnedpasswords-offline
and pwnedpass (PyPI) on the same corpus, side by side in one run, warm
(files in the page cache) and cold (page cache dropped before each pass;
needs root).

    pip install ./crates/python pwnedpasswords-offline pwnedpass
    python crates/python/bench/lookups.py SORTED.txt [INDEX] [--lookups N] [--cold N]

SORTED.txt is a corpus sorted by hash (`SHA1:COUNT` lines, as HIBP's
downloader writes; `pwned_macro --emit N --sorted` generates one). The
seekless index (INDEX, default SORTED.txt with .idx) is built with the
`seekless` on $PATH (or $SEEKLESS) when absent; pwnedpass's file (19 bytes a
hash plus a 128 MiB table) is written beside the corpus when absent, by
this script, in pwnedpass's format (its own converter needs every 3-byte
prefix present, which a corpus smaller than the real one lacks).

Queries: hashes drawn at random from the corpus (members) and random
hashes (non-members), half each, and random passwords for the password
APIs; the same queries for every contender.
"""

import argparse
import hashlib
import os
import random
import subprocess
import sys
import time

import pwnedpass
import pwnedpass.constants as pc
from pwnedpasswords_offline import PwnedPasswordsOfflineChecker

import seekless


def drop_caches(paths):
    """Drops the page cache (every file, as root)."""
    subprocess.run(["sync"], check=True)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as error:
        sys.exit(f"cold runs need root to drop the page cache: {error}")


def warm(paths):
    for path in paths:
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass


def sample_members(corpus, n, rng):
    """n hashes of the corpus, from random offsets."""
    size = os.path.getsize(corpus)
    out = []
    with open(corpus, "rb") as f:
        while len(out) < n:
            f.seek(rng.randrange(size))
            f.readline()
            line = f.readline()
            if len(line) > 40:
                out.append(line[:40].decode())
    return out


def build_pwnedpass(corpus, out_path):
    """pwnedpass's file: 2^24 big-endian 8-byte offsets (one per 3-byte
    prefix, into the data after them), then 17 hash bytes and a 4-byte
    big-endian count per hash, in hash order."""
    tmp = out_path + ".tmp"
    pointers = bytearray(pc.INDEX_SEGMENT_SIZE)
    next_prefix = 0
    written = 0
    with open(corpus, "rb") as src, open(tmp, "wb") as out:
        out.seek(pc.INDEX_SEGMENT_SIZE)
        buffer = bytearray()
        for line in src:
            digest = bytes.fromhex(line[:40].decode())
            prefix = int.from_bytes(digest[:3], "big")
            while next_prefix <= prefix:
                pointers[next_prefix * 8 : next_prefix * 8 + 8] = written.to_bytes(8, "big")
                next_prefix += 1
            buffer += digest[3:]
            buffer += min(int(line[41:]), 2**32 - 1).to_bytes(4, "big")
            written += pc.ENTRY_SIZE
            if len(buffer) > 1 << 24:
                out.write(buffer)
                buffer.clear()
        out.write(buffer)
        while next_prefix < 1 << 24:
            pointers[next_prefix * 8 : next_prefix * 8 + 8] = written.to_bytes(8, "big")
            next_prefix += 1
        out.seek(0)
        out.write(pointers)
    os.replace(tmp, out_path)


def rate(n, seconds):
    return n / seconds if seconds else float("inf")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus")
    parser.add_argument("index", nargs="?")
    parser.add_argument("--lookups", type=int, default=100_000, help="warm lookups per contender")
    parser.add_argument("--cold", type=int, default=0, help="cold lookups per contender (root)")
    args = parser.parse_args()
    index_path = args.index or os.path.splitext(args.corpus)[0] + ".idx"
    pp_path = os.path.splitext(args.corpus)[0] + ".pwnedpass"
    if not os.path.exists(index_path):
        binary = os.environ.get("SEEKLESS", "seekless")
        subprocess.run([binary, "pwned", "prepare", args.corpus, "-o", index_path], check=True)
    if not os.path.exists(pp_path):
        print(f"writing {pp_path} ...", file=sys.stderr)
        build_pwnedpass(args.corpus, pp_path)

    rng = random.Random(20261124)
    members = sample_members(args.corpus, args.lookups // 2, rng)
    strangers = ["%040X" % rng.getrandbits(160) for _ in range(args.lookups - len(members))]
    hashes = members + strangers
    rng.shuffle(hashes)
    passwords = ["pw-%d-%x" % (i, rng.getrandbits(48)) for i in range(args.lookups)]

    index = seekless.PwnedIndex(index_path)
    offline = PwnedPasswordsOfflineChecker(args.corpus, bloom_file=None)
    offline.open()
    pp = open(pp_path, "rb")
    files = [index_path, args.corpus, pp_path]

    contenders = {
        "seekless count_hash": lambda hs: [index.count_hash(h) for h in hs],
        "pwnedpasswords-offline": lambda hs: [offline.lookup_hash(h) for h in hs],
        "pwnedpass": lambda hs: [pwnedpass.search(pp, bytes.fromhex(h)) for h in hs],
    }
    password_contenders = {
        "seekless count": lambda ps: [index.count(p) for p in ps],
        "seekless count_many": lambda ps: index.count_many(ps),
        "pwnedpasswords-offline": lambda ps: [offline.lookup_raw_password(p) for p in ps],
        "pwnedpass": lambda ps: [
            pwnedpass.search(pp, hashlib.sha1(p.encode()).digest()) for p in ps
        ],
    }

    # Every contender agrees on membership first.
    check = hashes[:2000]
    ours = [index.count_hash(h) > 0 for h in check]
    assert ours == [bool(offline.lookup_hash(h)) for h in check], "pwnedpasswords-offline disagrees"
    assert ours == [pwnedpass.search(pp, bytes.fromhex(h)) > 0 for h in check], "pwnedpass disagrees"
    assert sum(ours) >= len(check) // 3, "members were not found"

    print(f"corpus {args.corpus}: {len(index):,} hashes; {args.lookups:,} warm lookups each"
          + (f", {args.cold:,} cold" if args.cold else ""))
    print(f"{'contender':26} {'hashes/s warm':>14} {'passwords/s warm':>17} {'cold /s':>9}")
    results = {}
    for name in ["seekless count_hash", "seekless count", "seekless count_many",
                 "pwnedpasswords-offline", "pwnedpass"]:
        by_hash = contenders.get(name)
        by_password = password_contenders.get(name)
        row = {}
        warm(files)
        if by_hash:
            start = time.perf_counter()
            by_hash(hashes)
            row["hash"] = rate(len(hashes), time.perf_counter() - start)
        if by_password:
            start = time.perf_counter()
            by_password(passwords)
            row["password"] = rate(len(passwords), time.perf_counter() - start)
        if args.cold and (by_hash or name == "seekless count_many"):
            # Mapped pages stay cached while mapped: close everything,
            # drop the cache, open again, then look up.
            index.close()
            offline.close()
            pp.close()
            drop_caches(files)
            index = seekless.PwnedIndex(index_path)
            offline = PwnedPasswordsOfflineChecker(args.corpus, bloom_file=None)
            offline.open()
            pp = open(pp_path, "rb")
            if name == "seekless count_many":
                start = time.perf_counter()
                password_contenders[name](passwords[: args.cold])
            else:
                start = time.perf_counter()
                by_hash(hashes[: args.cold])
            row["cold"] = rate(args.cold, time.perf_counter() - start)
        results[name] = row
        fmt = lambda key: f"{row[key]:,.0f}" if key in row else "-"
        print(f"{name:26} {fmt('hash'):>14} {fmt('password'):>17} {fmt('cold'):>9}")

    best_peer_hash = max(results[n]["hash"] for n in ["pwnedpasswords-offline", "pwnedpass"])
    best_peer_pw = max(results[n]["password"] for n in ["pwnedpasswords-offline", "pwnedpass"])
    print(f"ratios: count_hash {results['seekless count_hash']['hash'] / best_peer_hash:.1f}x the faster peer; "
          f"count {results['seekless count']['password'] / best_peer_pw:.1f}x; "
          f"count_many {results['seekless count_many']['password'] / best_peer_pw:.1f}x")
    if args.cold:
        best_cold = max(results[n]["cold"] for n in ["pwnedpasswords-offline", "pwnedpass"])
        print(f"cold: count_hash {results['seekless count_hash']['cold'] / best_cold:.1f}x the faster peer")


if __name__ == "__main__":
    main()
