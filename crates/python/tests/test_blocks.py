"""seekless.blocks on a small generated regtest chain (tests/data: blocks
XOR'd and out of order as Core writes them, with a stale fork; the UTXO
snapshot at the tip; the facts the blocks crate's fixture program found,
crates/blocks/tests/python_fixture.rs, which says how to regenerate
them)."""

import json
import os
import pathlib
import shutil

import pytest

from seekless.blocks import Blocks, CorruptBlocksError, TxIndex, read_snapshot

DATA = pathlib.Path(__file__).resolve().parent / "data"
FACTS = json.loads((DATA / "facts.json").read_text())


def unspendable(script: bytes) -> bool:
    # Core's IsUnspendable: OP_RETURN first, or over 10,000 bytes.
    return script[:1] == b"\x6a" or len(script) > 10_000


@pytest.fixture(scope="module")
def blocks() -> Blocks:
    return Blocks(DATA / "blocks")


@pytest.fixture(scope="module")
def walked(blocks):
    """One walk with prevouts: what the tests compare with."""
    return [
        (
            b.height,
            b.hash,
            [
                (
                    tx.txid,
                    tx.coinbase,
                    [(i.prev_txid, i.vout, i.prevout) for i in tx.inputs],
                    [(o.value, o.script) for o in tx.outputs],
                    len(tx.raw),
                )
                for tx in b.transactions
            ],
        )
        for b in blocks
    ]


def test_the_scan_finds_the_best_chain(blocks):
    assert blocks.network == "regtest"
    assert blocks.height == FACTS["height"]
    assert blocks.tip == FACTS["tip"]
    assert len(blocks) == FACTS["best_chain"] == FACTS["height"] + 1
    assert "regtest" in repr(blocks)
    # A file, or several, as well as the directory.
    files = sorted((DATA / "blocks").glob("blk*.dat"))
    assert Blocks(files).tip == FACTS["tip"]
    key = (DATA / "blocks" / "xor.dat").read_bytes()
    assert Blocks(str(DATA / "blocks"), xor=key).tip == FACTS["tip"]


def test_blocks_come_in_height_order_with_every_prevout_resolved(walked):
    assert [h for h, _, _ in walked] == list(range(FACTS["height"] + 1))
    hashes = {h: hash for h, hash, _ in walked}
    for height, hash in FACTS["hashes"]:
        assert hashes[height] == hash
    assert hashes[0] == FACTS["genesis"]
    # Every output seen so far, by outpoint: each prevout must be the
    # output its input names, made at its block's height.
    outputs = {}
    created = spent = transactions = inputs = 0
    for height, _, txs in walked:
        for txid, coinbase, ins, outs, _ in txs:
            transactions += 1
            if coinbase:
                assert len(ins) == 1 and ins[0][2] is None
                assert ins[0][0] == "00" * 32
            for prev_txid, vout, prevout in ins if not coinbase else []:
                inputs += 1
                assert prevout is not None
                value, script, at, made_by_coinbase = outputs.pop((prev_txid, vout))
                assert (prevout.value, prevout.script) == (value, script)
                assert (prevout.height, prevout.coinbase) == (at, made_by_coinbase)
                spent += prevout.value
            for vout, (value, script) in enumerate(outs):
                if height > 0:
                    created += value
                if not unspendable(script) and height > 0:
                    outputs[(txid, vout)] = (value, script, height, coinbase)
    assert transactions == FACTS["transactions"]
    assert inputs == FACTS["inputs"]
    assert (created, spent) == (FACTS["created"], FACTS["spent"])
    assert len(outputs) == FACTS["coins"]
    assert sum(v for v, _, _, _ in outputs.values()) == FACTS["total_amount"]
    # The same set the snapshot holds, row for row.
    rows = {(txid, vout): (value, script, height, coinbase)
            for txid, vout, value, coinbase, height, script in read_snapshot(DATA / "utxo.dat")}
    assert rows == outputs


def test_the_facts_txids_are_where_the_facts_say(walked):
    at = {}
    for height, _, txs in walked:
        for position, (txid, _, _, _, size) in enumerate(txs):
            at[txid] = (height, position, size)
    for tx in FACTS["txids"]:
        assert at[tx["txid"]] == (tx["height"], tx["position"], tx["size"])


def test_without_prevouts_the_same_blocks(blocks, walked):
    seen = []
    for block in blocks.iter(prevouts=False):
        for tx in block.transactions:
            assert all(i.prevout is None for i in tx.inputs)
        seen.append((block.height, block.hash, [tx.txid for tx in block.transactions]))
    assert seen == [(h, hash, [tx[0] for tx in txs]) for h, hash, txs in walked]


def test_stop_ends_at_a_height(blocks):
    assert [b.height for b in blocks.iter(stop=5)] == list(range(6))
    assert [b.height for b in blocks.iter(stop=0)] == [0]
    with pytest.raises(ValueError, match="past the best chain's tip"):
        blocks.iter(stop=FACTS["height"] + 1)


def fees(block) -> int:
    return sum(
        sum(i.prevout.value for i in tx.inputs if i.prevout)
        - sum(o.value for o in tx.outputs)
        for tx in block.transactions[1:]
    )


def test_a_memory_budget_gives_the_same_blocks_and_leaves_no_file(blocks, tmp_path):
    in_memory = [fees(b) for b in blocks]
    on_disk = [fees(b) for b in blocks.iter(memory=1 << 14, tmp_dir=tmp_path)]
    assert on_disk == in_memory
    assert sum(in_memory) > 0
    assert list(tmp_path.iterdir()) == []
    # Stopped early, dropped or closed: the thread ends, its files go.
    walk = blocks.iter(memory=1 << 14, tmp_dir=tmp_path)
    assert [next(walk).height for _ in range(30)] == list(range(30))
    walk.close()
    assert list(walk) == []
    assert list(tmp_path.iterdir()) == []
    walk = iter(blocks.iter(memory=1 << 14, tmp_dir=tmp_path))
    next(walk)
    del walk
    assert list(tmp_path.iterdir()) == []


def test_read_snapshot(blocks):
    snapshot = read_snapshot(str(DATA / "utxo.dat"))
    assert snapshot.network == "regtest"
    assert snapshot.base == blocks.tip
    assert snapshot.coins == len(snapshot) == FACTS["coins"]
    rows = list(snapshot)
    assert len(rows) == FACTS["coins"]
    assert sum(row[2] for row in rows) == FACTS["total_amount"]
    txid, vout, value, coinbase, height, script = rows[0]
    assert len(txid) == 64 and isinstance(script, bytes) and isinstance(coinbase, bool)
    # Iterated again: read again, from the start.
    assert list(snapshot) == rows


def test_txindex(blocks, tmp_path):
    index = blocks.build_txindex(tmp_path / "tx.idx", memory=1 << 20)
    assert len(index) == FACTS["transactions"]
    assert index.tip == (FACTS["tip"], FACTS["height"])
    for tx in FACTS["txids"]:
        found = index.get(tx["txid"])
        assert found is not None
        raw, height, position = found
        assert (len(raw), height, position) == (tx["size"], tx["height"], tx["position"])
    reopened = TxIndex(tmp_path / "tx.idx", blocks=DATA / "blocks")
    assert reopened.get(FACTS["txids"][0]["txid"]) == index.get(FACTS["txids"][0]["txid"])
    assert index.get("ab" * 32) is None
    with pytest.raises(ValueError):
        index.get("not hex")


def test_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        Blocks(tmp_path / "absent")
    with pytest.raises(FileNotFoundError):
        Blocks(tmp_path)  # no blk*.dat in it
    with pytest.raises(FileNotFoundError):
        read_snapshot(tmp_path / "absent.dat")
    with pytest.raises(FileNotFoundError):
        TxIndex(tmp_path / "absent.idx")
    with pytest.raises(ValueError, match="5 bytes, not 8"):
        Blocks(DATA / "blocks", xor=b"short")


def test_obfuscated_files_read_as_plain_say_what_may_be_wrong():
    with pytest.raises(CorruptBlocksError, match="xor.dat"):
        Blocks(DATA / "blocks", xor=bytes(8))


def test_truncated_files_raise(blocks, tmp_path):
    data = (DATA / "utxo.dat").read_bytes()
    cut = tmp_path / "cut.dat"
    cut.write_bytes(data[: len(data) // 2])
    snapshot = read_snapshot(cut)
    with pytest.raises(CorruptBlocksError, match="cut.dat"):
        list(snapshot)
    cut.write_bytes(data[:20])
    with pytest.raises(CorruptBlocksError):
        read_snapshot(cut)
    index = tmp_path / "tx.idx"
    blocks.build_txindex(index)
    index.write_bytes(index.read_bytes()[:-100])
    with pytest.raises(CorruptBlocksError):
        TxIndex(index)


def copy_blocks(tmp_path: pathlib.Path) -> pathlib.Path:
    copy = tmp_path / "blocks"
    shutil.copytree(DATA / "blocks", copy)
    return copy


def test_a_block_file_cut_after_the_scan_raises(tmp_path):
    copy = copy_blocks(tmp_path)
    opened = Blocks(copy)
    first = copy / "blk00000.dat"
    os.truncate(first, first.stat().st_size // 2)
    with pytest.raises(CorruptBlocksError):
        for _ in opened:
            pass


def test_a_block_that_breaks_a_rule_ends_the_iteration_naming_it(blocks, tmp_path):
    target = next(b for b in blocks.iter(prevouts=False) if b.height == 60)
    raw = target.raw
    copy = copy_blocks(tmp_path)
    key = (copy / "xor.dat").read_bytes()
    for path in sorted(copy.glob("blk*.dat")):
        data = path.read_bytes()
        plain = bytes(b ^ key[i % 8] for i, b in enumerate(data))
        at = plain.find(raw)
        if at >= 0:
            # A byte of the coinbase's script: the txid, then the merkle
            # root, no longer match; the header (and the scan) are unchanged.
            flip = at + 80 + 1 + 4 + 1 + 36 + 1 + 2
            changed = bytearray(data)
            changed[flip] ^= 0x01
            path.write_bytes(bytes(changed))
            break
    else:
        raise AssertionError("block 60 not found in the files")
    heights = []
    with pytest.raises(CorruptBlocksError, match=target.hash) as raised:
        for block in Blocks(copy):
            heights.append(block.height)
    assert heights == list(range(60))
    assert "60" in str(raised.value)
