"""Offline Have I Been Pwned password checks: seekless indexes from Python.

``PwnedIndex(path)`` opens an index built by ``seekless pwned update``,
``seekless pwned prepare`` or ``seekless.build_index`` once,
memory-mapped and shared by every thread; each lookup reads one 4 KiB
page. ``seekless.bencode.decode`` and ``seekless.torrent.info`` read
bencode and torrent files; ``seekless.blocks`` reads Bitcoin Core's block
files (blocks with the coins their inputs spent, UTXO snapshots, a
transaction index); ``seekless.django`` holds the offline Django password
validator.
"""

from . import bencode, blocks, torrent
from ._seekless import CorruptIndexError, PwnedIndex, __version__, build_index
from ._types import BuildSummary, IndexStats

__all__ = [
    "BuildSummary",
    "CorruptIndexError",
    "IndexStats",
    "PwnedIndex",
    "__version__",
    "bencode",
    "blocks",
    "build_index",
    "torrent",
]
