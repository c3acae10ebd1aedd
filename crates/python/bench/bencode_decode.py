"""Bencode decoding from Python: seekless.bencode.decode against the
decoders on PyPI (bencode.py, bencodepy, fastbencode) on the same inputs,
side by side in one run.

    pip install ./crates/python bencode.py bencodepy fastbencode
    python crates/python/bench/bencode_decode.py [FILE ...] [--repeat N]

Inputs: the torrents of crates/bencode/tests/data (or the FILEs given) and
a DHT get_peers response (BEP 5) built here, of the shape the Rust macro
benchmark uses. Every decoder's answer is checked against seekless's
first (bencode.py turns UTF-8 strings into str: they are turned back into
bytes for the comparison); a decoder that differs, or fails, is reported
and not timed. Each figure is the median over --repeat rounds of the time
a decode takes, each round as many decodes as fill about 0.1 s. Beside
them, pickle.loads of the same objects: what CPython's C unpickler takes to
build them, a floor for any decoder that returns plain objects.
"""

import argparse
import os
import pickle
import random
import statistics
import sys
import time

import seekless.bencode

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "bencode", "tests", "data")


def peers():
    """The decoders on PyPI that are installed: name and decode function."""
    found = []
    try:
        import bencode  # bencode.py

        found.append(("bencode.py", bencode.bdecode))
    except ImportError:
        pass
    try:
        import bencodepy

        found.append(("bencodepy", bencodepy.decode))
    except ImportError:
        pass
    try:
        import fastbencode

        found.append(("fastbencode", fastbencode.bdecode))
    except ImportError:
        pass
    return found


def dht_message():
    """A DHT get_peers response: 8 compact nodes, 4 peers, a token."""
    rng = random.Random(5)

    def raw(n):
        return bytes(rng.getrandbits(8) for _ in range(n))

    def string(b):
        return str(len(b)).encode() + b":" + b

    values = b"l" + b"".join(string(raw(6)) for _ in range(4)) + b"e"
    r = (
        b"d" + string(b"id") + string(raw(20)) + string(b"nodes") + string(raw(8 * 26))
        + string(b"token") + string(raw(8)) + string(b"values") + values + b"e"
    )
    return (
        b"d" + string(b"ip") + string(raw(6)) + string(b"r") + r + string(b"t") + string(b"aa")
        + string(b"v") + string(b"LT\x02\x00") + string(b"y") + string(b"r") + b"e"
    )


def as_bytes(value):
    """bencode.py's answer with its str turned back into bytes."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, list):
        return [as_bytes(v) for v in value]
    if isinstance(value, dict):
        return {as_bytes(k): as_bytes(v) for k, v in value.items()}
    return value


def per_decode(decode, data, repeat):
    """Median seconds a decode of data takes."""
    start = time.perf_counter()
    n = 0
    while time.perf_counter() - start < 0.02:
        decode(data)
        n += 1
    number = max(1, int(n * 5))
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            decode(data)
        rounds.append((time.perf_counter() - start) / number)
    return statistics.median(rounds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    files = args.files or sorted(
        os.path.join(DATA, f) for f in os.listdir(DATA) if f.endswith(".torrent")
    )
    inputs = [(os.path.basename(f), open(f, "rb").read()) for f in files]
    inputs.append(("dht-get-peers", dht_message()))
    contenders = peers()
    print(f"Python {sys.version.split()[0]}; peers: {', '.join(n for n, _ in contenders) or 'none'}")
    header = ["input", "bytes", "seekless ns"] + [f"{n} ns" for n, _ in contenders]
    header += ["fastest peer / seekless", "pickle.loads ns"]
    print("\t".join(header))
    worst = None
    for name, data in inputs:
        want = seekless.bencode.decode(data)
        ours = per_decode(seekless.bencode.decode, data, args.repeat)
        row = [name, str(len(data)), f"{ours * 1e9:,.0f}"]
        times = []
        for peer, decode in contenders:
            try:
                got = decode(data)
            except Exception as e:  # a peer's own error: reported, not timed
                row.append(f"fails ({type(e).__name__})")
                continue
            if as_bytes(got) != want:
                row.append("differs")
                continue
            t = per_decode(decode, data, args.repeat)
            times.append(t)
            row.append(f"{t * 1e9:,.0f}")
        if times:
            ratio = min(times) / ours
            worst = ratio if worst is None else min(worst, ratio)
            row.append(f"{ratio:.2f}x")
        else:
            row.append("-")
        # The floor for any decoder that builds these objects: CPython's C
        # unpickler making the same ints, bytes, lists and dicts.
        pickled = pickle.dumps(want, protocol=pickle.HIGHEST_PROTOCOL)
        row.append(f"{per_decode(pickle.loads, pickled, args.repeat) * 1e9:,.0f}")
        print("\t".join(row))
    if worst is not None:
        print(f"lowest ratio (fastest peer's time / ours): {worst:.2f}x (target >= 3x)")


if __name__ == "__main__":
    main()
