import os
import pathlib
from collections.abc import Iterable
from types import TracebackType
from typing import Literal, Optional, Type, Union

from typing_extensions import Buffer, final

from seekless._types import BuildSummary, IndexStats

__all__ = [
    "CorruptIndexError",
    "PwnedIndex",
    "__version__",
    "bencode_decode",
    "build_index",
    "torrent_info_json",
]

#: The version of the package (the Rust crate's).
__version__: str

_StrPath = Union[str, os.PathLike[str]]

class CorruptIndexError(Exception):
    """The file is not a seekless index, or it is damaged."""

@final
class PwnedIndex:
    """A Pwned Passwords index, opened once and memory-mapped."""

    def __new__(cls, path: _StrPath) -> "PwnedIndex": ...
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
    def count_once(path: _StrPath, hex: str) -> int:
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

def build_index(
    inputs: Union[_StrPath, bytes, Iterable[Union[_StrPath, bytes]]],
    output: _StrPath,
    *,
    key_bits: Optional[int] = None,
    min_count: int = 1,
    skip_invalid: bool = False,
    threads: Optional[int] = None,
    memory: Optional[int] = None,
    tmp_dir: Optional[_StrPath] = None,
) -> BuildSummary:
    """Builds an index at ``output`` from ``HASH:COUNT`` text (files, gzip
    files, directories of range files, or ``bytes``), as ``seekless pwned
    prepare`` does, with the GIL released; returns what the build did.
    ``key_bits``: a compact index; ``min_count``: a subset; a malformed
    line raises ``ValueError`` unless ``skip_invalid``."""

def bencode_decode(data: Buffer) -> object:
    """One bencoded value as Python objects (see ``seekless.bencode.decode``)."""

def torrent_info_json(data: Buffer) -> str:
    """A torrent's metadata as JSON (see ``seekless.torrent.info``)."""
