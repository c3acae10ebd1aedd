"""Indexes for the tests, built by the package itself
(``seekless.build_index``): the tests need nothing but the installed
package."""

import hashlib
import pathlib
import random

import pytest

import seekless

LISTED = {"password": 9545824, "hunter2": 17, "letmein": 1, "correct horse": 2}


def build(tmp: pathlib.Path, name: str, lines: list) -> pathlib.Path:
    index = tmp / f"{name}.idx"
    seekless.build_index("".join(f"{h}:{c}\n" for h, c in lines).encode(), index)
    return index


@pytest.fixture(scope="session")
def random_hashes() -> list:
    rng = random.Random(7)
    return [("%040X" % rng.getrandbits(160), rng.randint(1, 10**6)) for _ in range(5000)]


@pytest.fixture(scope="session")
def sha1_index(tmp_path_factory, random_hashes) -> pathlib.Path:
    lines = [(hashlib.sha1(p.encode()).hexdigest().upper(), c) for p, c in LISTED.items()]
    return build(tmp_path_factory.mktemp("sha1"), "sha1", lines + random_hashes)


@pytest.fixture(scope="session")
def ntlm_index(tmp_path_factory) -> pathlib.Path:
    # NTLM of "password" (MD4 of its UTF-16LE), which hashlib may lack.
    lines = [("8846F7EAEE8FB117AD06BDD830B7586C", 42)]
    rng = random.Random(8)
    lines += [("%032X" % rng.getrandbits(128), 1) for _ in range(500)]
    return build(tmp_path_factory.mktemp("ntlm"), "ntlm", lines)
