import os
import pathlib
from collections.abc import Iterable
from types import TracebackType
from typing import Literal, Optional, Type, TypedDict, Union

class CorruptIndexError(Exception):
    """The file is not a seekless index, or it is damaged."""

class IndexStats(TypedDict):
    version: int
    kind: Literal["sha1", "ntlm"]
    hashes: int
    total_count: int
    pages: int
    bucket_bits: int
    key_bits: int
    bytes: int
    compact: bool
    false_positive_rate: float

class PwnedIndex:
    """A Pwned Passwords index, opened once and memory-mapped."""

    def __init__(self, path: Union[str, os.PathLike[str]]) -> None: ...
    def count(self, password: str) -> int:
        """How many times ``password`` appears in the corpus (0: not listed)."""
    def count_hash(self, hex: str) -> int:
        """The count of a hash in hex (40 digits for SHA-1, 32 for NTLM)."""
    def count_many(self, passwords: Iterable[str]) -> list[int]:
        """The counts of many passwords, in order, with the GIL released."""
    def count_many_hashes(self, hashes: Iterable[str]) -> list[int]:
        """The counts of many hashes in hex (of the index's kind, either case),
        in order, with the GIL released; a malformed hash raises
        ``ValueError`` naming its position (0-based)."""
    @staticmethod
    def count_once(path: Union[str, os.PathLike[str]], hex: str) -> int:
        """One lookup without opening the index (about 2 ms cold)."""
    @property
    def kind(self) -> Literal["sha1", "ntlm"]: ...
    @property
    def path(self) -> pathlib.Path: ...
    def __len__(self) -> int: ...
    def stats(self) -> IndexStats: ...
    def verify(self) -> None:
        """Checks every page; raises ``CorruptIndexError`` at the first damage."""
    def close(self) -> None: ...
    def __enter__(self) -> "PwnedIndex": ...
    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> bool: ...

def bencode_decode(data: bytes) -> object:
    """One bencoded value as Python objects (see ``seekless.bencode.decode``)."""

def torrent_info_json(data: bytes) -> str:
    """A torrent's metadata as JSON (see ``seekless.torrent.info``)."""
