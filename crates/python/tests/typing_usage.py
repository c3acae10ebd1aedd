"""The whole public API as a typed program uses it: checked by
``mypy --strict`` against the package's annotations and stubs
(test_typing.py), and run, so that what the types say is what happens.

Each ``assert_type`` pins what a call is declared to return; the calls
under ``if TYPE_CHECKING`` are misuses the annotations must refuse (with
``warn_unused_ignores``, an ignore that no longer matches an error fails
the check)."""

import mmap
import pathlib
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Iterator,
    List,
    Literal,
    Optional,
    Tuple,
    Union,
    assert_type,
)

import seekless
import seekless.bencode
import seekless.blocks
import seekless.torrent
from seekless import BuildSummary, CorruptIndexError, IndexStats, PwnedIndex
from seekless.django import PwnedPasswordsValidator
from seekless.torrent import TorrentFile, TorrentInfo

SHA1_PASSWORD = "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8"


def pwned(tmp: pathlib.Path) -> None:
    text = tmp / "corpus.txt"
    text.write_text(f"{SHA1_PASSWORD}:3\n")
    output = tmp / "pwned.idx"
    summary = seekless.build_index([text, b"0000000000000000000000000000000000000001:1\n"], output)
    assert_type(summary, BuildSummary)
    assert_type(summary["kind"], Literal["sha1", "ntlm"])
    assert_type(summary["key_bits"], Optional[int])
    assert_type(summary["first_invalid"], Optional[str])
    assert_type(summary["streamed"], bool)
    assert_type(summary["false_positive_rate"], float)
    seekless.build_index(str(text), str(tmp / "one.idx"), min_count=1, skip_invalid=True)
    seekless.build_index(
        b"", tmp / "empty.idx", key_bits=None, threads=1, memory=1 << 20, tmp_dir=tmp
    )

    with PwnedIndex(output) as index:
        assert_type(index, PwnedIndex)
        assert_type(index.count("password"), int)
        assert_type(index.count_hash(SHA1_PASSWORD), int)
        assert_type(index.count_many(["a", "b"]), List[int])
        assert_type(index.count_many(p for p in ["a"]), List[int])
        assert_type(index.count_many_hashes([SHA1_PASSWORD]), List[int])
        assert_type(index.kind, Literal["sha1", "ntlm"])
        assert_type(index.path, pathlib.Path)
        assert_type(len(index), int)
        stats = index.stats()
        assert_type(stats, IndexStats)
        assert_type(stats["compact"], bool)
        assert_type(stats["false_positive_rate"], float)
        assert_type(index.verify(), None)
    assert_type(PwnedIndex.count_once(str(output), SHA1_PASSWORD), int)
    index.close()
    try:
        PwnedIndex(tmp / "absent.idx")
    except (FileNotFoundError, CorruptIndexError):
        pass
    assert_type(seekless.__version__, str)

    if TYPE_CHECKING:
        index.count(b"password")  # type: ignore[arg-type]
        index.count_many("password")  # a str is an Iterable[str]: allowed, one per character
        index.count_many([1, 2])  # type: ignore[list-item]
        index.kind = "ntlm"  # type: ignore[misc]
        stats["no such key"]  # type: ignore[typeddict-item]
        seekless.build_index([text], output, key_bits="48")  # type: ignore[arg-type]
        seekless.build_index([1], output)  # type: ignore[list-item]

        class Sub(PwnedIndex):  # type: ignore[misc]
            pass


def bencode(tmp: pathlib.Path) -> None:
    value = seekless.bencode.decode(b"d3:cow3:mooe")
    assert_type(value, Union[int, bytes, List[Any], Dict[bytes, Any]])
    seekless.bencode.decode(bytearray(b"i1e"))
    seekless.bencode.decode(memoryview(b"i1e"))
    path = tmp / "one.bencode"
    path.write_bytes(b"i1e")
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        seekless.bencode.decode(mapped)
    if TYPE_CHECKING:
        seekless.bencode.decode("i1e")  # type: ignore[arg-type]


def torrent(data: bytes) -> None:
    info = seekless.torrent.info(data)
    assert_type(info, TorrentInfo)
    assert_type(info["name"], str)
    assert_type(info["version"], Literal["v1", "v2", "hybrid"])
    assert_type(info["info_hash_v1"], Optional[str])
    assert_type(info["info_hash_v2"], Optional[str])
    assert_type(info["piece_length"], int)
    assert_type(info["creation_date"], Optional[int])
    assert_type(info["trackers"], List[List[str]])
    for file in info["files"]:
        assert_type(file, TorrentFile)
        assert_type(file["pieces_root"], Optional[str])
        assert_type(file["pad"], bool)
    seekless.torrent.info(bytearray(data))
    if TYPE_CHECKING:
        info["piece length"]  # type: ignore[typeddict-item]


def blocks(data: pathlib.Path, tmp: pathlib.Path) -> None:
    from seekless.blocks import (
        Block,
        Blocks,
        Coin,
        CorruptBlocksError,
        Input,
        Output,
        Snapshot,
        SnapshotRow,
        Transaction,
        TxIndex,
    )

    chain = Blocks(data / "blocks")
    Blocks(str(data / "blocks"), xor=None)
    Blocks([data / "blocks" / "blk00000.dat"], xor=(data / "blocks" / "xor.dat").read_bytes())
    assert_type(chain.network, str)
    assert_type(chain.height, int)
    assert_type(chain.tip, str)
    assert_type(len(chain), int)
    fees: List[int] = []
    for block in chain.iter(stop=3, memory=1 << 20, tmp_dir=tmp):
        assert_type(block, Block)
        assert_type(block.height, int)
        assert_type(block.hash, str)
        assert_type(block.raw, bytes)
        fee = 0
        for tx in block.transactions:
            assert_type(tx, Transaction)
            assert_type(tx.txid, str)
            assert_type(tx.raw, bytes)
            assert_type(tx.coinbase, bool)
            for i in tx.inputs:
                assert_type(i, Input)
                assert_type(i.prev_txid, str)
                assert_type(i.vout, int)
                assert_type(i.prevout, Optional[Coin])
                if i.prevout is not None:
                    assert_type(i.prevout.value, int)
                    assert_type(i.prevout.script, bytes)
                    assert_type(i.prevout.height, int)
                    assert_type(i.prevout.coinbase, bool)
                    fee += i.prevout.value
            for o in tx.outputs:
                assert_type(o, Output)
                assert_type(o.script, bytes)
                fee -= o.value if not tx.coinbase else 0
        fees.append(fee)
    walk = chain.iter(prevouts=False)
    assert_type(next(walk), Block)
    walk.close()
    for block in chain:
        assert_type(block, Block)
        break
    snapshot = seekless.blocks.read_snapshot(data / "utxo.dat")
    assert_type(snapshot, Snapshot)
    assert_type(snapshot.network, str)
    assert_type(snapshot.base, str)
    assert_type(snapshot.coins, int)
    rows: Iterator[SnapshotRow] = iter(snapshot)
    for row in rows:
        assert_type(row, Tuple[str, int, int, bool, int, bytes])
        break
    index = chain.build_txindex(tmp / "tx.idx", memory=1 << 20)
    assert_type(index, TxIndex)
    found = TxIndex(tmp / "tx.idx", blocks=data / "blocks").get("00" * 32)
    assert_type(found, Optional[Tuple[bytes, int, int]])
    assert_type(index.tip, Optional[Tuple[str, int]])
    try:
        Blocks(tmp / "absent")
    except (FileNotFoundError, CorruptBlocksError):
        pass
    if TYPE_CHECKING:
        chain.iter(True)  # type: ignore[call-arg]
        chain.iter(stop="3")  # type: ignore[arg-type]
        index.get(b"00")  # type: ignore[arg-type]
        block.height = 3  # type: ignore[misc]


def django() -> None:
    validator = PwnedPasswordsValidator(error_message=("Seen once.", "Seen %(amount)d times."))
    validator.validate("an unlisted passphrase 9d1c")
    validator.get_help_text()
    assert_type(validator.deconstruct()[0], str)
