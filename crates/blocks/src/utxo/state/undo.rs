//! A block's undo data in a chainstate directory (`DIR/undo/HEIGHT-HASH`,
//! docs/format-blocks.md): every change connecting it made to the set, in
//! order (a coin spent, with the coin; an output added, with the coin it
//! replaced when one was there), so that disconnecting it needs nothing
//! but this file: the changes undone last first. The block's parent's
//! hash leads to the undo data below it.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::coin::{Coin, OutPoint};
use crate::error::{Error, ErrorKind, Result};
use crate::hash::BlockHash;
use crate::utxo::connect::Change;

/// An undo file's first bytes.
pub(crate) const UNDO_MAGIC: [u8; 8] = *b"SLUNDO\0\0";
/// The undo format's version.
const UNDO_VERSION: u32 = 1;
/// Magic, version, network, height, hash, parent's hash, change count.
pub(crate) const UNDO_HEADER: usize = 88;
/// A change: a coin spent (outpoint, coin).
const SPENT: u8 = 1;
/// A change: an output added where no coin was (outpoint).
const ADDED: u8 = 2;
/// A change: an output added over a coin (outpoint, the coin replaced).
const REPLACED: u8 = 3;
/// The fewest bytes a change takes (tag and outpoint).
const MIN_CHANGE: usize = 37;

/// The block an undo file belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UndoHeader {
    pub(crate) network: [u8; 4],
    pub(crate) height: u32,
    pub(crate) hash: [u8; 32],
    pub(crate) prev: [u8; 32],
}

/// The undo file of block `hash` at `height` in `dir` (the `undo` folder).
pub(crate) fn undo_path(dir: &Path, height: u32, hash: &[u8; 32]) -> PathBuf {
    dir.join(format!("{height:010}-{}", BlockHash(*hash)))
}

/// The bytes of an undo file.
pub(crate) fn encode(header: &UndoHeader, changes: &[Change]) -> Vec<u8> {
    let mut out = Vec::with_capacity(UNDO_HEADER + changes.len() * 64);
    out.extend_from_slice(&UNDO_MAGIC);
    out.extend_from_slice(&UNDO_VERSION.to_le_bytes());
    out.extend_from_slice(&header.network);
    out.extend_from_slice(&header.height.to_le_bytes());
    out.extend_from_slice(&header.hash);
    out.extend_from_slice(&header.prev);
    out.extend_from_slice(&(changes.len() as u32).to_le_bytes());
    let outpoint = |out: &mut Vec<u8>, at: &OutPoint| {
        out.extend_from_slice(&at.txid);
        out.extend_from_slice(&at.vout.to_le_bytes());
    };
    for change in changes {
        match change {
            Change::Spent(at, coin) => {
                out.push(SPENT);
                outpoint(&mut out, at);
                coin.write_compressed(&mut out);
            }
            Change::Added(at, None) => {
                out.push(ADDED);
                outpoint(&mut out, at);
            }
            Change::Added(at, Some(coin)) => {
                out.push(REPLACED);
                outpoint(&mut out, at);
                coin.write_compressed(&mut out);
            }
        }
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Writes the undo file under a temporary name and renames it (not
/// synced: the commit that makes its block part of the state syncs it).
pub(crate) fn write(dir: &Path, header: &UndoHeader, changes: &[Change]) -> Result<PathBuf> {
    let path = undo_path(dir, header.height, &header.hash);
    let temp = path.with_extension("tmp");
    let mut file = File::create(&temp).map_err(|e| Error::io(&temp, "create", e))?;
    file.write_all(&encode(header, changes))
        .map_err(|e| Error::io(&temp, "write", e))?;
    drop(file);
    fs::rename(&temp, &path).map_err(|e| Error::io(&temp, "rename", e))?;
    Ok(path)
}

fn bad(path: &Path, reason: String) -> Error {
    ErrorKind::BadState {
        path: path.to_path_buf(),
        reason,
    }
    .into()
}

/// Reads an undo file's header: magic, version, and the block it names.
pub(crate) fn decode_header(bytes: &[u8], path: &Path) -> Result<UndoHeader> {
    if bytes.len() < UNDO_HEADER || bytes[..8] != UNDO_MAGIC {
        return Err(bad(path, "not undo data (wrong magic or too short)".into()));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != UNDO_VERSION {
        let reason = format!("undo data of version {version}, not {UNDO_VERSION}");
        return Err(bad(path, reason));
    }
    Ok(UndoHeader {
        network: bytes[12..16].try_into().expect("4 bytes"),
        height: u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes")),
        hash: bytes[20..52].try_into().expect("32 bytes"),
        prev: bytes[52..84].try_into().expect("32 bytes"),
    })
}

/// Reads a whole undo file: its header and changes, checksum checked.
pub(crate) fn decode(bytes: &[u8], path: &Path) -> Result<(UndoHeader, Vec<Change>)> {
    let header = decode_header(bytes, path)?;
    let body_end = bytes.len() - 4;
    if body_end < UNDO_HEADER {
        return Err(bad(path, "undo data too short".into()));
    }
    let crc = u32::from_le_bytes(bytes[body_end..].try_into().expect("4 bytes"));
    if crc != crc32c::crc32c(&bytes[..body_end]) {
        return Err(bad(path, "undo data fails its checksum".into()));
    }
    let count = u32::from_le_bytes(bytes[84..88].try_into().expect("4 bytes")) as usize;
    if count > (body_end - UNDO_HEADER) / MIN_CHANGE {
        let reason = format!("{count} changes cannot fit in {} bytes", bytes.len());
        return Err(bad(path, reason));
    }
    let mut changes = Vec::with_capacity(count);
    let mut at = UNDO_HEADER;
    for _ in 0..count {
        let Some(head) = bytes[..body_end].get(at..at + MIN_CHANGE) else {
            return Err(bad(path, format!("undo data ends inside a change at {at}")));
        };
        let outpoint = OutPoint {
            txid: head[1..33].try_into().expect("32 bytes"),
            vout: u32::from_le_bytes(head[33..37].try_into().expect("4 bytes")),
        };
        let tag = head[0];
        at += MIN_CHANGE;
        let mut coin = || -> Result<Coin> {
            let (coin, len) = Coin::read_compressed(&bytes[at..body_end], at as u64)
                .map_err(|e| bad(path, format!("undo data: {e}")))?;
            at += len;
            Ok(coin)
        };
        changes.push(match tag {
            SPENT => Change::Spent(outpoint, coin()?),
            ADDED => Change::Added(outpoint, None),
            REPLACED => Change::Added(outpoint, Some(coin()?)),
            other => return Err(bad(path, format!("undo change of unknown kind {other}"))),
        });
    }
    if at != body_end {
        return Err(bad(
            path,
            format!("undo data has bytes after its changes at {at}"),
        ));
    }
    Ok((header, changes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage_refused() {
        let at = |t: u8, vout| OutPoint {
            txid: [t; 32],
            vout,
        };
        let coin = |value| Coin {
            value,
            height: 7,
            coinbase: true,
            script: vec![0x51, 0x52],
        };
        let changes = vec![
            Change::Spent(at(1, 0), coin(5)),
            Change::Added(at(2, 3), None),
            Change::Added(at(3, 1), Some(coin(50))),
        ];
        let header = UndoHeader {
            network: *b"\xfa\xbf\xb5\xda",
            height: 9,
            hash: [4; 32],
            prev: [5; 32],
        };
        let bytes = encode(&header, &changes);
        let path = Path::new("undo");
        assert_eq!(decode(&bytes, path).unwrap(), (header, changes));
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut], path).is_err(), "cut at {cut}");
        }
        for at in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x04;
            assert!(decode(&flipped, path).is_err(), "flip at {at}");
        }
    }
}
