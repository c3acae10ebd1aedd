import os
import pathlib
from collections.abc import Iterable
from types import TracebackType
from typing import Iterator, Literal, Optional, Tuple, Type, Union

from typing_extensions import Buffer, final

from seekless._types import BuildSummary, IndexStats

__all__ = [
    "Block",
    "BlockIterator",
    "Blocks",
    "Coin",
    "CorruptBlocksError",
    "CorruptIndexError",
    "Input",
    "Output",
    "Snapshot",
    "SnapshotRows",
    "Transaction",
    "TxIndex",
    "PwnedIndex",
    "__version__",
    "bencode_decode",
    "build_index",
    "read_snapshot",
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

# The blocks engine: seekless.blocks re-exports these.

class CorruptBlocksError(ValueError):
    """Block files, a snapshot or a transaction index that are damaged, or a
    block that breaks one of Core's rules."""

@final
class Coin:
    """An unspent output as the UTXO set holds it."""

    @property
    def value(self) -> int: ...
    @property
    def script(self) -> bytes: ...
    @property
    def height(self) -> int: ...
    @property
    def coinbase(self) -> bool: ...

@final
class Output:
    """An output of a transaction."""

    @property
    def value(self) -> int: ...
    @property
    def script(self) -> bytes: ...

@final
class Input:
    """An input: the output it spends, and the coin it was (``prevout``)."""

    @property
    def prev_txid(self) -> str: ...
    @property
    def vout(self) -> int: ...
    @property
    def prevout(self) -> Optional[Coin]: ...

@final
class Transaction:
    """A transaction of a block."""

    @property
    def txid(self) -> str: ...
    @property
    def raw(self) -> bytes: ...
    @property
    def coinbase(self) -> bool: ...
    @property
    def inputs(self) -> list[Input]: ...
    @property
    def outputs(self) -> list[Output]: ...

@final
class Block:
    """A block of the best chain."""

    @property
    def height(self) -> int: ...
    @property
    def hash(self) -> str: ...
    @property
    def raw(self) -> bytes: ...
    @property
    def transactions(self) -> list[Transaction]: ...

@final
class BlockIterator:
    """The best chain's blocks, from the thread that reads and connects them."""

    def __iter__(self) -> "BlockIterator": ...
    def __next__(self) -> Block: ...
    def close(self) -> None: ...

@final
class TxIndex:
    """A transaction index: transactions by txid, read from the block files."""

    def __new__(cls, path: _StrPath, *, blocks: Optional[_StrPath] = None) -> "TxIndex": ...
    def get(self, txid: str) -> Optional[Tuple[bytes, int, int]]:
        """The transaction's bytes, its block's height and its position there."""
    def __len__(self) -> int: ...
    @property
    def tip(self) -> Optional[Tuple[str, int]]: ...

@final
class Blocks:
    """Bitcoin Core block files, scanned once."""

    def __new__(
        cls, path: Union[_StrPath, Iterable[_StrPath]], *, xor: Optional[bytes] = None
    ) -> "Blocks": ...
    @property
    def network(self) -> str: ...
    @property
    def height(self) -> int: ...
    @property
    def tip(self) -> str: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> BlockIterator: ...
    def iter(
        self,
        *,
        prevouts: bool = True,
        stop: Optional[int] = None,
        memory: Optional[int] = None,
        tmp_dir: Optional[_StrPath] = None,
    ) -> BlockIterator:
        """The best chain's blocks in height order, genesis first."""
    def build_txindex(self, output: _StrPath, *, memory: Optional[int] = None) -> TxIndex:
        """Builds a transaction index at ``output`` and opens it."""

#: A snapshot's coin as utxo_to_sqlite.py's columns: txid, vout, value,
#: coinbase, height, scriptpubkey.
_Row = Tuple[str, int, int, bool, int, bytes]

@final
class SnapshotRows:
    """A snapshot's coins, read as they are asked for."""

    def __iter__(self) -> "SnapshotRows": ...
    def __next__(self) -> _Row: ...

@final
class Snapshot:
    """Core's UTXO snapshot: its header, and its coins as rows when iterated."""

    @property
    def network(self) -> str: ...
    @property
    def base(self) -> str: ...
    @property
    def coins(self) -> int: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> SnapshotRows: ...

def read_snapshot(path: _StrPath) -> Snapshot:
    """Reads a UTXO snapshot's header; its coins are read when iterated."""
