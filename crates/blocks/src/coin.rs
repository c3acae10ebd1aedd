//! The chainstate's unit: an unspent transaction output (a coin) and the
//! outpoint that names it, with the order Core's chainstate database keeps
//! them in (the order of `dumptxoutset`), and Core's VARINT, which that
//! order and the snapshot's coins are written with.

use std::cmp::Ordering;

use crate::error::{ErrorKind, Result};

/// Core's `MAX_SCRIPT_SIZE`: an output whose script is longer can never be
/// spent, and Core never adds it to the UTXO set.
pub const MAX_SCRIPT_SIZE: usize = 10_000;

/// `OP_RETURN`: an output whose script starts with it can never be spent.
pub const OP_RETURN: u8 = 0x6a;

/// Where an output is: its transaction's id (internal byte order, as
/// hashed) and its index among that transaction's outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OutPoint {
    /// The transaction's id, in internal byte order (not the reversed hex).
    pub txid: [u8; 32],
    /// The output's index.
    pub vout: u32,
}

impl OutPoint {
    /// Core's order of coins in its chainstate database and in
    /// `dumptxoutset`: the database key `'C' | txid | VARINT(vout)`
    /// compared byte by byte, so by txid bytes, then by the VARINT bytes of
    /// the index (the same as the index's numeric order below 16,512).
    pub fn core_cmp(&self, other: &OutPoint) -> Ordering {
        self.txid.cmp(&other.txid).then_with(|| {
            let (mut a, mut b) = ([0u8; VARINT_MAX_LEN], [0u8; VARINT_MAX_LEN]);
            let (a_len, b_len) = (
                write_varint(self.vout as u64, &mut a),
                write_varint(other.vout as u64, &mut b),
            );
            a[..a_len].cmp(&b[..b_len])
        })
    }
}

/// An unspent output as Core's chainstate keeps it: its value, its script,
/// the height of the block that created it and whether it came from a
/// coinbase.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Coin {
    /// The value in satoshis.
    pub value: u64,
    /// The height of the block whose transaction created it.
    pub height: u32,
    /// Whether that transaction is the block's coinbase.
    pub coinbase: bool,
    /// The output script (scriptPubKey), uncompressed.
    pub script: Vec<u8>,
}

impl Coin {
    /// Core's `nHeight * 2 + fCoinBase`: the code that begins a coin's
    /// serialization (a VARINT there, a little-endian u32 in MuHash's).
    pub fn code(&self) -> u32 {
        (self.height << 1) | self.coinbase as u32
    }
}

/// Core's `CScript::IsUnspendable`: a script that starts with `OP_RETURN` or
/// is longer than [`MAX_SCRIPT_SIZE`]. Such outputs never enter the UTXO
/// set.
pub fn is_unspendable(script: &[u8]) -> bool {
    script.first() == Some(&OP_RETURN) || script.len() > MAX_SCRIPT_SIZE
}

/// The longest VARINT of a u64.
pub const VARINT_MAX_LEN: usize = 10;

/// Writes `value` as Core's VARINT (`serialize.h`: base 128, most
/// significant group first, every byte but the last with its high bit set,
/// each group but the last stored minus one, so every value has exactly one
/// encoding) into the start of `out`; returns its length.
pub fn write_varint(mut value: u64, out: &mut [u8; VARINT_MAX_LEN]) -> usize {
    let mut tmp = [0u8; VARINT_MAX_LEN];
    let mut len = 0;
    loop {
        tmp[len] = (value & 0x7f) as u8 | if len > 0 { 0x80 } else { 0 };
        if value <= 0x7f {
            break;
        }
        value = (value >> 7) - 1;
        len += 1;
    }
    for (i, byte) in tmp[..=len].iter().rev().enumerate() {
        out[i] = *byte;
    }
    len + 1
}

/// Reads one of Core's VARINTs for a type whose largest value is `max`
/// (`u32::MAX` for Core's `unsigned int` fields, `u64::MAX` for amounts),
/// taking bytes from `next`; refuses, as Core's `ReadVarInt` does, a value
/// that would not fit. `offset` is where the VARINT starts, for the error.
pub(crate) fn read_varint(
    mut next: impl FnMut() -> Result<u8>,
    max: u64,
    offset: u64,
) -> Result<u64> {
    let mut value: u64 = 0;
    loop {
        let byte = next()?;
        if value > max >> 7 {
            return Err(ErrorKind::VarIntTooLarge { offset }.into());
        }
        value = (value << 7) | (byte & 0x7f) as u64;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
        if value == max {
            return Err(ErrorKind::VarIntTooLarge { offset }.into());
        }
        value += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(value: u64) -> Vec<u8> {
        let mut out = [0u8; VARINT_MAX_LEN];
        let len = write_varint(value, &mut out);
        out[..len].to_vec()
    }

    #[test]
    fn varint_matches_core() {
        // serialize_tests.cpp's `varints` checks and its byte strings.
        assert_eq!(varint(0), [0x00]);
        assert_eq!(varint(0x7f), [0x7f]);
        assert_eq!(varint(0x80), [0x80, 0x00]);
        assert_eq!(varint(0x1234), [0xa3, 0x34]);
        assert_eq!(varint(0xffff), [0x82, 0xfe, 0x7f]);
        assert_eq!(varint(0x123456), [0xc7, 0xe7, 0x56]);
        assert_eq!(varint(0x80123456), [0x86, 0xff, 0xc7, 0xe7, 0x56]);
        assert_eq!(varint(0xffffffff), [0x8e, 0xfe, 0xfe, 0xfe, 0x7f]);
        assert_eq!(
            varint(u64::MAX),
            [0x80, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0x7f]
        );
    }

    fn read(bytes: &[u8], max: u64) -> Result<(u64, usize)> {
        let mut pos = 0;
        let value = read_varint(
            || {
                let byte = bytes.get(pos).copied().ok_or(ErrorKind::UnexpectedEof {
                    offset: pos,
                    what: "varint",
                })?;
                pos += 1;
                Ok(byte)
            },
            max,
            0,
        )?;
        Ok((value, pos))
    }

    #[test]
    fn varint_reads_back_and_refuses_overflow() {
        for value in [
            0,
            1,
            0x7f,
            0x80,
            0x4080,
            0xffff,
            0xffff_ffff,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let bytes = varint(value);
            assert_eq!(read(&bytes, u64::MAX).unwrap(), (value, bytes.len()));
        }
        assert_eq!(
            read(&varint(u32::MAX as u64), u32::MAX as u64).unwrap().0,
            u32::MAX as u64
        );
        // One past the type's largest value, and a run of continuation
        // bytes, are refused before they wrap.
        let too_large = |bytes: &[u8], max| {
            matches!(
                read(bytes, max).unwrap_err().kind(),
                ErrorKind::VarIntTooLarge { .. }
            )
        };
        assert!(too_large(&varint(u32::MAX as u64 + 1), u32::MAX as u64));
        assert!(too_large(&[0xff; 11], u64::MAX));
        assert!(too_large(
            &[0x8e, 0xfe, 0xfe, 0xfe, 0xff, 0x00],
            u32::MAX as u64
        ));
        assert!(matches!(
            read(&[0x80, 0x80], u64::MAX).unwrap_err().kind(),
            ErrorKind::UnexpectedEof { .. }
        ));
    }

    #[test]
    fn core_order_follows_the_varint_bytes() {
        let at = |vout| OutPoint {
            txid: [7; 32],
            vout,
        };
        assert_eq!(at(1).core_cmp(&at(2)), Ordering::Less);
        assert_eq!(at(127).core_cmp(&at(128)), Ordering::Less);
        assert_eq!(at(200).core_cmp(&at(300)), Ordering::Less);
        // 16,511 is `ff 7f`, 16,512 is `80 80 00`.
        assert_eq!(at(16_511).core_cmp(&at(16_512)), Ordering::Greater);
        let other = OutPoint {
            txid: [8; 32],
            vout: 0,
        };
        assert_eq!(at(u32::MAX).core_cmp(&other), Ordering::Less);
    }

    #[test]
    fn unspendable_scripts() {
        assert!(is_unspendable(&[OP_RETURN, 1, 2]));
        assert!(is_unspendable(&vec![0x51; MAX_SCRIPT_SIZE + 1]));
        assert!(!is_unspendable(&vec![0x51; MAX_SCRIPT_SIZE]));
        assert!(!is_unspendable(&[]));
    }
}
