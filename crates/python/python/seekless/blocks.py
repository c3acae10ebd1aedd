"""Bitcoin Core's block files, read by seekless's Rust blocks engine.

``Blocks(path)`` scans a ``blocks/`` directory (or ``blk*.dat`` files),
XOR-obfuscated or not, once; iterating it yields the best chain's blocks in
height order, genesis first, each connected to the UTXO set on a thread of
its own so that every input carries the coin it spent (``prevout``)::

    from seekless.blocks import Blocks

    for block in Blocks("/home/me/.bitcoin/blocks"):
        fees = sum(
            sum(i.prevout.value for i in tx.inputs if i.prevout)
            - sum(o.value for o in tx.outputs)
            for tx in block.transactions[1:]
        )

``read_snapshot(path)`` reads Core's UTXO snapshot (``dumptxoutset``, or
``seekless blocks utxo``) as rows; ``TxIndex(path)`` looks transactions up
by txid in an index ``seekless blocks txindex`` or ``Blocks.build_txindex``
wrote. Damaged files, and a block that breaks one of Core's rules, raise
``CorruptBlocksError`` (a ``ValueError``); a missing file
``FileNotFoundError``; other I/O ``OSError``.
"""

import typing

from ._seekless import (
    Block,
    BlockIterator,
    Blocks,
    Coin,
    CorruptBlocksError,
    Input,
    Output,
    Snapshot,
    SnapshotRows,
    Transaction,
    TxIndex,
    read_snapshot,
)

#: A snapshot's coin as the columns of Core's utxo_to_sqlite.py: txid (hex,
#: as Core shows it), vout, value (satoshis), coinbase, height,
#: scriptpubkey.
SnapshotRow = typing.Tuple[str, int, int, bool, int, bytes]

__all__ = [
    "Block",
    "BlockIterator",
    "Blocks",
    "Coin",
    "CorruptBlocksError",
    "Input",
    "Output",
    "Snapshot",
    "SnapshotRow",
    "SnapshotRows",
    "Transaction",
    "TxIndex",
    "read_snapshot",
]
