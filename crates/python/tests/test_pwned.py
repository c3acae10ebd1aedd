"""seekless.PwnedIndex against indexes built by seekless.build_index."""

import hashlib
import os
import shutil
import threading

import pytest

import seekless
from conftest import LISTED


def sha1(password: str) -> str:
    return hashlib.sha1(password.encode()).hexdigest()


def test_counts_passwords_and_hashes(sha1_index, random_hashes):
    with seekless.PwnedIndex(sha1_index) as index:
        for password, count in LISTED.items():
            assert index.count(password) == count
            assert index.count_hash(sha1(password)) == count
            assert index.count_hash(sha1(password).upper()) == count
        assert index.count("not in the corpus, surely 7f3a") == 0
        assert index.count("") == 0
        for hex_hash, count in random_hashes[:500]:
            assert index.count_hash(hex_hash) == count
        assert index.kind == "sha1"
        assert len(index) == len(LISTED) + len(random_hashes)
        stats = index.stats()
        assert stats["hashes"] == len(index)
        assert stats["kind"] == "sha1"
        assert stats["total_count"] == sum(LISTED.values()) + sum(c for _, c in random_hashes)
        assert stats["compact"] is False and stats["false_positive_rate"] == 0
        assert "PwnedIndex(" in repr(index)
        index.verify()


def test_count_many_matches_one_at_a_time(sha1_index):
    passwords = list(LISTED) + [f"unlisted {i}" for i in range(1000)] + ["password"] * 3
    with seekless.PwnedIndex(sha1_index) as index:
        want = [index.count(p) for p in passwords]
        assert index.count_many(passwords) == want
        assert index.count_many(p for p in passwords) == want
        assert index.count_many([]) == []
        # Batches this large are split across threads: order is kept.
        many = [f"unlisted {i}" if i % 1000 else "password" for i in range(70_000)]
        assert index.count_many(many) == [9545824 if i % 1000 == 0 else 0 for i in range(70_000)]
        with pytest.raises(TypeError):
            index.count_many(["password", 7])
        with pytest.raises(TypeError):
            index.count_many(5)


def test_count_many_hashes_matches_count_hash(sha1_index, ntlm_index, random_hashes):
    with seekless.PwnedIndex(sha1_index) as index:
        hashes = [sha1(p) for p in LISTED] + [h for h, _ in random_hashes[:1000]]
        hashes += [h.lower() for h, _ in random_hashes[1000:1100]] + ["0" * 40]
        want = [index.count_hash(h) for h in hashes]
        assert want[: len(LISTED)] == list(LISTED.values()) and want[-1] == 0
        assert index.count_many_hashes(hashes) == want
        assert index.count_many_hashes(h for h in hashes) == want
        assert index.count_many_hashes([]) == []
        # Batches this large are split across threads: order is kept, and
        # the error names the first bad hash's position in the whole.
        many = [random_hashes[i % 5000][0] for i in range(70_000)]
        assert index.count_many_hashes(many) == [random_hashes[i % 5000][1] for i in range(70_000)]
        many[50_000] = "G" * 40
        many[60_000] = "1234"
        with pytest.raises(ValueError, match=r'hash 50000: "G{40}" is not hexadecimal'):
            index.count_many_hashes(many)
        with pytest.raises(TypeError):
            index.count_many_hashes([sha1("password"), 7])
        with pytest.raises(TypeError):
            index.count_many_hashes(5)
    with seekless.PwnedIndex(ntlm_index) as index:
        assert index.count_many_hashes(
            ["8846F7EAEE8FB117AD06BDD830B7586C", "8846f7eaee8fb117ad06bdd830b7586c", "0" * 32]
        ) == [42, 42, 0]
        with pytest.raises(ValueError, match=r"hash 1: .* a SHA-1 hash; the index holds NTLM"):
            index.count_many_hashes(["0" * 32, sha1("password")])


@pytest.mark.parametrize(
    "bad, what",
    [
        ("", '"" is 0 characters long; a SHA-1 hash is 40 hex digits'),
        ("5BAA6", '"5BAA6" is 5 characters long'),
        ("5" * 41, "is 41 characters long"),
        (" " + "5" * 39, "is not hexadecimal"),
        ("é" * 40, "is not hexadecimal"),
        ("8846F7EAEE8FB117AD06BDD830B7586C", "is 32 hex digits, an NTLM hash; the index holds SHA-1"),
        ("x" * 100, '"' + "x" * 48 + '"… is 100 characters long'),
    ],
)
def test_count_many_hashes_says_where_and_what(sha1_index, bad, what):
    with seekless.PwnedIndex(sha1_index) as index:
        with pytest.raises(ValueError) as raised:
            index.count_many_hashes([sha1("password"), sha1("hunter2"), bad])
        assert str(raised.value).startswith("hash 2: ")
        assert what in str(raised.value)


def test_count_once_reads_without_opening(sha1_index):
    assert seekless.PwnedIndex.count_once(sha1_index, sha1("password")) == 9545824
    assert seekless.PwnedIndex.count_once(str(sha1_index), "0" * 40) == 0
    with pytest.raises(ValueError):
        seekless.PwnedIndex.count_once(sha1_index, "xyz")


def test_ntlm_index_hashes_passwords_as_ntlm(ntlm_index):
    with seekless.PwnedIndex(ntlm_index) as index:
        assert index.kind == "ntlm"
        assert index.count("password") == 42
        assert index.count_hash("8846f7eaee8fb117ad06bdd830b7586c") == 42
        with pytest.raises(ValueError):
            index.count_hash(sha1("password"))  # 40 digits: not an NTLM hash


@pytest.mark.parametrize("bad", ["", "5BAA6", "G" * 40, "5" * 41, " " + "5" * 39, "é" * 40])
def test_malformed_hashes_are_value_errors(sha1_index, bad):
    with seekless.PwnedIndex(sha1_index) as index:
        with pytest.raises(ValueError):
            index.count_hash(bad)


def test_missing_and_damaged_files_raise_python_errors(sha1_index, tmp_path):
    with pytest.raises(FileNotFoundError):
        seekless.PwnedIndex(tmp_path / "absent.idx")
    with pytest.raises(FileNotFoundError):
        seekless.PwnedIndex.count_once(tmp_path / "absent.idx", "0" * 40)
    garbage = tmp_path / "garbage.idx"
    garbage.write_bytes(os.urandom(20000))
    with pytest.raises(seekless.CorruptIndexError):
        seekless.PwnedIndex(garbage)
    empty = tmp_path / "empty.idx"
    empty.write_bytes(b"")
    with pytest.raises(seekless.CorruptIndexError):
        seekless.PwnedIndex(empty)
    data = sha1_index.read_bytes()
    truncated = tmp_path / "truncated.idx"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(seekless.CorruptIndexError):
        seekless.PwnedIndex(truncated)
    # A flipped bit in every page's middle: opening may succeed, lookups
    # and verify() raise, never crash.
    damaged = tmp_path / "damaged.idx"
    shutil.copy(sha1_index, damaged)
    raw = bytearray(damaged.read_bytes())
    for page in range(1, len(raw) // 4096):
        raw[page * 4096 + 2000] ^= 0x10
    damaged.write_bytes(bytes(raw))
    try:
        index = seekless.PwnedIndex(damaged)
    except seekless.CorruptIndexError:
        return
    with pytest.raises(seekless.CorruptIndexError):
        index.verify()
    failures = 0
    for password in list(LISTED) + [f"x{i}" for i in range(200)]:
        try:
            index.count(password)
        except seekless.CorruptIndexError:
            failures += 1
    assert failures > 0


def test_closed_index_refuses_lookups(sha1_index):
    index = seekless.PwnedIndex(sha1_index)
    with index as same:
        assert same is index
    with pytest.raises(ValueError, match="closed"):
        index.count("password")
    with pytest.raises(ValueError):
        len(index)
    assert "closed" in repr(index)
    index.close()  # twice is fine


def test_one_index_shared_by_threads(sha1_index):
    index = seekless.PwnedIndex(sha1_index)
    passwords = list(LISTED) + [f"unlisted {i}" for i in range(300)]
    want = [index.count(p) for p in passwords]
    results, errors = [], []

    def work():
        try:
            for _ in range(20):
                results.append(index.count_many(passwords) == want)
                results.append([index.count(p) for p in passwords[:10]] == want[:10])
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 320 and all(results)
