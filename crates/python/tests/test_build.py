"""seekless.build_index, and the package's version."""

import hashlib
import importlib.metadata
import re

import pytest

import seekless


def sha1(password: str) -> str:
    return hashlib.sha1(password.encode()).hexdigest().upper()


def test_version_is_the_package_version():
    assert seekless.__version__ == importlib.metadata.version("seekless")
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", seekless.__version__)


def test_builds_from_paths_and_bytes(tmp_path):
    first = tmp_path / "first.txt"
    first.write_text(f"{sha1('password')}:10\n{sha1('hunter2')}:17\n")
    second = f"{sha1('password')}:5\n{sha1('letmein')}:1\n".encode()
    output = tmp_path / "pwned.idx"
    summary = seekless.build_index([first, second], output)
    assert summary["kind"] == "sha1"
    assert (summary["lines"], summary["hashes"], summary["duplicates"]) == (4, 3, 1)
    assert summary["bytes"] == output.stat().st_size
    assert summary["key_bits"] is None and summary["min_count"] == 1 and summary["left_out"] == 0
    assert summary["invalid"] == 0 and summary["first_invalid"] is None
    assert summary["false_positive_rate"] == 0
    with seekless.PwnedIndex(output) as index:
        assert [index.count(p) for p in ["password", "hunter2", "letmein", "x"]] == [15, 17, 1, 0]
        index.verify()
    # One input alone: a path as str, or bytes.
    assert seekless.build_index(str(first), tmp_path / "one.idx")["hashes"] == 2
    assert seekless.build_index(second, tmp_path / "two.idx")["hashes"] == 2
    # Any iterable of inputs.
    assert seekless.build_index((i for i in [second]), tmp_path / "gen.idx")["hashes"] == 2


def test_subset_and_compact_index(tmp_path):
    text = "".join(f"{sha1(str(i))}:{i}\n" for i in range(1, 101)).encode()
    summary = seekless.build_index(text, tmp_path / "subset.idx", min_count=51)
    assert (summary["hashes"], summary["left_out"], summary["min_count"]) == (50, 50, 51)
    with seekless.PwnedIndex(tmp_path / "subset.idx") as index:
        assert index.count("60") == 60 and index.count("40") == 0
    summary = seekless.build_index(text, tmp_path / "compact.idx", key_bits=48, threads=1, memory=1 << 20)
    assert summary["key_bits"] == 48 and 0 < summary["false_positive_rate"] < 1e-9
    with seekless.PwnedIndex(tmp_path / "compact.idx") as index:
        assert index.stats()["compact"] is True and index.count("7") == 7


def test_ntlm_corpus(tmp_path):
    summary = seekless.build_index(b"8846F7EAEE8FB117AD06BDD830B7586C:42\n", tmp_path / "ntlm.idx")
    assert summary["kind"] == "ntlm"
    assert seekless.PwnedIndex(tmp_path / "ntlm.idx").count("password") == 42


def test_malformed_input_is_a_value_error(tmp_path):
    output = tmp_path / "bad.idx"
    text = f"{sha1('a')}:1\nnot a hash line\n{sha1('b')}:2\n".encode()
    with pytest.raises(ValueError, match=r"<bytes 0>:2"):
        seekless.build_index(text, output)
    assert not output.exists()  # nothing left behind
    summary = seekless.build_index(text, output, skip_invalid=True)
    assert summary["invalid"] == 1 and summary["hashes"] == 2
    assert summary["first_invalid"] is not None and summary["first_invalid"].startswith("<bytes 0>:2")
    with pytest.raises(ValueError):  # SHA-1 and NTLM together
        seekless.build_index(f"{sha1('a')}:1\n{'0' * 32}:1\n".encode(), output)
    with pytest.raises(ValueError):
        seekless.build_index(text, output, key_bits=8, skip_invalid=True)
    with pytest.raises(ValueError):
        seekless.build_index(text, output, min_count=0)


def test_missing_input_and_wrong_types(tmp_path):
    with pytest.raises(FileNotFoundError):
        seekless.build_index(tmp_path / "absent.txt", tmp_path / "out.idx")
    with pytest.raises(TypeError):
        seekless.build_index([7], tmp_path / "out.idx")
    with pytest.raises(TypeError):
        seekless.build_index(b"", tmp_path / "out.idx", threads="2")  # type: ignore[arg-type]
