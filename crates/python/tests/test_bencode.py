"""seekless.bencode.decode and seekless.torrent.info."""

import array
import hashlib
import mmap
import pathlib
import random

import pytest

import seekless

DATA = pathlib.Path(__file__).resolve().parents[2] / "bencode" / "tests" / "data"


def test_values_decode_to_plain_python():
    assert seekless.bencode.decode(b"i42e") == 42
    assert seekless.bencode.decode(b"i-7e") == -7
    assert seekless.bencode.decode(b"4:spam") == b"spam"
    assert seekless.bencode.decode(b"0:") == b""
    assert seekless.bencode.decode(b"le") == []
    assert seekless.bencode.decode(b"de") == {}
    assert seekless.bencode.decode(b"d3:cow3:moo4:spaml1:ai-1eee") == {b"cow": b"moo", b"spam": [b"a", -1]}
    assert seekless.bencode.decode(bytearray(b"l4:\x00\xff\x01\x80e")) == [b"\x00\xff\x01\x80"]
    assert seekless.bencode.decode(b"i9223372036854775807e") == 2**63 - 1
    assert seekless.bencode.decode(b"i-9223372036854775808e") == -(2**63)


@pytest.mark.parametrize(
    "bad",
    [b"", b"i42", b"4:spa", b"l4:spam", b"d3:cowe", b"i4x2e", b"i42ee", b"x", b"-1:", b"99999999999999999:a",
     b"l" * 200 + b"e" * 200, b"i9223372036854775808e", b"4:spam4:eggs"],
)
def test_malformed_input_is_a_value_error(bad):
    with pytest.raises(ValueError):
        seekless.bencode.decode(bad)


def test_random_input_never_crashes():
    rng = random.Random(3)
    alphabet = b"ilde0123456789:-x"
    for _ in range(5000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.randrange(1, 40)))
        try:
            seekless.bencode.decode(data)
        except ValueError:
            pass


def value_end(data: bytes, at: int) -> int:
    """Where the bencoded value starting at ``at`` ends (an independent
    reading, to hash the info dictionary's raw bytes)."""
    depth = 0
    while True:
        c = data[at : at + 1]
        if c in (b"d", b"l"):
            depth += 1
            at += 1
        elif c == b"e":
            depth -= 1
            at += 1
        elif c == b"i":
            at = data.index(b"e", at) + 1
        else:
            colon = data.index(b":", at)
            at = colon + 1 + int(data[at:colon])
        if depth == 0:
            return at


@pytest.mark.parametrize("name", ["base-v1.torrent", "sample.torrent", "v2_hybrid.torrent", "base-v2.torrent"])
def test_torrent_info_matches_the_file(name):
    data = (DATA / name).read_bytes()
    info = seekless.torrent.info(data)
    decoded = seekless.bencode.decode(data)
    assert info["name"] == decoded[b"info"][b"name"].decode()
    start = data.index(b"4:info") + len(b"4:info")
    raw_info = data[start : value_end(data, start)]
    if info["info_hash_v1"] is not None:
        assert info["info_hash_v1"] == hashlib.sha1(raw_info).hexdigest()
    if info["info_hash_v2"] is not None:
        assert info["info_hash_v2"] == hashlib.sha256(raw_info).hexdigest()
    assert info["total_size"] >= 0 and info["piece_length"] > 0
    assert isinstance(info["files"], list) and info["files"]


def test_not_a_torrent_is_a_value_error():
    for data in [b"", b"de", b"d4:infodee", b"i1e", (DATA / "base-v1.torrent").read_bytes()[:-10]]:
        with pytest.raises(ValueError):
            seekless.torrent.info(data)


def test_every_contiguous_buffer_is_read_in_place(tmp_path):
    data = (DATA / "sample.torrent").read_bytes()
    want = seekless.bencode.decode(data)
    assert seekless.bencode.decode(bytearray(data)) == want
    assert seekless.bencode.decode(memoryview(data)) == want
    assert seekless.bencode.decode(memoryview(bytearray(data))) == want
    assert seekless.bencode.decode(memoryview(b"xx" + data + b"yy")[2:-2]) == want
    assert seekless.bencode.decode(memoryview(data).cast("c")) == want
    assert seekless.bencode.decode(array.array("B", data)) == want
    assert seekless.torrent.info(bytearray(data)) == seekless.torrent.info(data)
    assert seekless.torrent.info(memoryview(data)) == seekless.torrent.info(data)
    path = tmp_path / "sample.torrent"
    path.write_bytes(data)
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        assert seekless.bencode.decode(mapped) == want
        assert seekless.torrent.info(mapped) == seekless.torrent.info(data)
    with open(path, "r+b") as file, mmap.mmap(file.fileno(), 0) as mapped:
        assert seekless.bencode.decode(mapped) == want
    # Empty buffers: malformed, as b"" is.
    for empty in [bytearray(), memoryview(b""), memoryview(bytearray())]:
        with pytest.raises(ValueError):
            seekless.bencode.decode(empty)


def test_the_buffer_is_released_after_decoding():
    # A bytearray exported to a reader cannot be resized: decoding must
    # let go of it, on success and on failure alike.
    data = bytearray(b"l4:spami7ee")
    assert seekless.bencode.decode(data) == [b"spam", 7]
    data += b"x"
    with pytest.raises(ValueError):
        seekless.bencode.decode(data)
    data.clear()
    with pytest.raises(ValueError):
        seekless.torrent.info(data)
    data.extend(b"de")


def test_strided_and_non_buffer_inputs_are_refused():
    strided = memoryview(b"iX4X2XeX")[::2]
    assert strided.tobytes() == b"i42e"
    with pytest.raises(ValueError, match="not contiguous"):
        seekless.bencode.decode(strided)
    with pytest.raises(ValueError, match="not contiguous"):
        seekless.torrent.info(strided)
    for not_a_buffer in ["i42e", 42, None, [105, 52, 50, 101]]:
        with pytest.raises(TypeError):
            seekless.bencode.decode(not_a_buffer)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            seekless.torrent.info(not_a_buffer)  # type: ignore[arg-type]


def test_garbage_collection_resumes_after_decoding():
    import gc

    data = bytearray((DATA / "sample.torrent").read_bytes())
    assert gc.isenabled()
    seekless.bencode.decode(data)
    assert gc.isenabled()
    with pytest.raises(ValueError):
        seekless.bencode.decode(data + b"!")
    assert gc.isenabled()
    gc.disable()
    try:
        seekless.bencode.decode(data)
        assert not gc.isenabled()  # left as it was
    finally:
        gc.enable()


def test_no_finalizer_runs_while_a_buffer_is_read():
    # Cyclic garbage whose finalizer overwrites the bytearray being
    # decoded: building thousands of objects would start a collection
    # (and run it) mid-decode, were the collector not paused.
    data = bytearray((DATA / "many-pad-files.torrent").read_bytes())
    want = seekless.bencode.decode(bytes(data))
    ran = []

    class Vandal:
        def __init__(self):
            self.me = self

        def __del__(self):
            ran.append(True)
            data[:] = b"x" * len(data)

    for _ in range(50):
        Vandal()
    assert seekless.bencode.decode(data) == want
    import gc

    gc.collect()
    assert ran and data == b"x" * len(data)
