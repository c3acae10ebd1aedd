//! Transactions: a borrowed view over the serialized bytes (legacy and segwit),
//! parsed with Core's rules and caps, never allocating from a count.

use sha2::{Digest, Sha256};

use crate::error::{ErrorKind, Result};
use crate::hash::sha256d;

/// Core's `MAX_SIZE`: the largest CompactSize accepted for any count or length.
pub const MAX_COMPACT_SIZE: u64 = 0x0200_0000;
const MIN_INPUT_LEN: u64 = 32 + 4 + 1 + 4;
const MIN_OUTPUT_LEN: u64 = 8 + 1;

/// A cursor over bytes that reports offsets relative to `origin`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    origin: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(bytes: &'a [u8], origin: usize) -> Self {
        Cursor {
            bytes,
            pos: 0,
            origin,
        }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn offset(&self) -> usize {
        self.origin + self.pos
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(crate) fn take(&mut self, len: usize, what: &'static str) -> Result<&'a [u8]> {
        if len > self.remaining() {
            return Err(ErrorKind::UnexpectedEof {
                offset: self.offset(),
                what,
            }
            .into());
        }
        let out = &self.bytes[self.pos..self.pos + len];
        self.pos += len;
        Ok(out)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    fn u32(&mut self, what: &'static str) -> Result<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &'static str) -> Result<u64> {
        let b = self.take(8, what)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// A canonical CompactSize no larger than [`MAX_COMPACT_SIZE`].
    pub(crate) fn compact_size(&mut self, what: &'static str) -> Result<u64> {
        let offset = self.offset();
        let first = self.u8(what)?;
        let (value, min) = match first {
            0..=0xfc => (first as u64, 0),
            0xfd => {
                let b = self.take(2, what)?;
                (u16::from_le_bytes([b[0], b[1]]) as u64, 0xfd)
            }
            0xfe => (self.u32(what)? as u64, 0x1_0000),
            0xff => (self.u64(what)?, 0x1_0000_0000),
        };
        if value < min {
            return Err(ErrorKind::NonCanonicalCompactSize { offset }.into());
        }
        if value > MAX_COMPACT_SIZE {
            return Err(ErrorKind::SizeTooLarge {
                offset,
                size: value,
                limit: MAX_COMPACT_SIZE,
            }
            .into());
        }
        Ok(value)
    }

    /// A count of items each at least `min_item` bytes long, checked against what is left.
    pub(crate) fn count(&mut self, min_item: u64, what: &'static str) -> Result<u64> {
        let offset = self.offset();
        let count = self.compact_size(what)?;
        let limit = self.remaining() as u64 / min_item;
        if count > limit {
            return Err(ErrorKind::SizeTooLarge {
                offset,
                size: count,
                limit,
            }
            .into());
        }
        Ok(count)
    }

    /// Bytes preceded by their CompactSize length.
    fn var_bytes(&mut self, what: &'static str) -> Result<&'a [u8]> {
        let len = self.compact_size(what)?;
        self.take(len as usize, what)
    }
}

/// Appends a CompactSize.
pub fn write_compact_size(out: &mut Vec<u8>, value: u64) {
    match value {
        0..=0xfc => out.push(value as u8),
        0xfd..=0xffff => {
            out.push(0xfd);
            out.extend_from_slice(&(value as u16).to_le_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xfe);
            out.extend_from_slice(&(value as u32).to_le_bytes());
        }
        _ => {
            out.push(0xff);
            out.extend_from_slice(&value.to_le_bytes());
        }
    }
}

/// A transaction input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxIn<'a> {
    /// Hash of the transaction spent (internal byte order).
    pub prev_txid: [u8; 32],
    /// Index of the output spent.
    pub prev_index: u32,
    /// The unlocking script.
    pub script_sig: &'a [u8],
    /// Sequence number.
    pub sequence: u32,
}

/// A transaction output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxOut<'a> {
    /// Amount in satoshis, as stored (signed).
    pub value: i64,
    /// The locking script.
    pub script_pubkey: &'a [u8],
}

/// A parsed transaction: a view over its serialized bytes.
#[derive(Clone, Copy, Debug)]
pub struct Transaction<'a> {
    raw: &'a [u8],
    version: i32,
    lock_time: u32,
    input_count: u64,
    output_count: u64,
    /// `raw[body.0..body.1]` is the inputs and outputs with their counts.
    body: (usize, usize),
    /// `raw[witness.0..witness.1]` is the witness stacks (empty for legacy).
    witness: (usize, usize),
}

impl<'a> Transaction<'a> {
    /// Parses one transaction from the start of `bytes`; `origin` is the
    /// offset of `bytes` in the enclosing data, used in errors. Returns the
    /// transaction and its length.
    pub fn parse(bytes: &'a [u8], origin: usize) -> Result<(Transaction<'a>, usize)> {
        let mut c = Cursor::new(bytes, origin);
        let version = c.u32("transaction version")? as i32;
        let mut body_start = c.pos();
        let mut input_count = c.count(MIN_INPUT_LEN, "input count")?;
        let mut flags = 0u8;
        let mut output_count = 0;
        if input_count == 0 {
            let flag_offset = c.offset();
            flags = c.u8("segwit flag")?;
            if flags != 0 {
                body_start = c.pos();
                input_count = c.count(MIN_INPUT_LEN, "input count")?;
                skip_inputs(&mut c, input_count)?;
                output_count = c.count(MIN_OUTPUT_LEN, "output count")?;
                skip_outputs(&mut c, output_count)?;
            } else {
                // Core reads no outputs here: `version 00 00 locktime` is an
                // empty transaction.
            }
            if flags & !1 != 0 {
                return Err(ErrorKind::UnknownTxFlags {
                    offset: flag_offset,
                    flags,
                }
                .into());
            }
        } else {
            skip_inputs(&mut c, input_count)?;
            output_count = c.count(MIN_OUTPUT_LEN, "output count")?;
            skip_outputs(&mut c, output_count)?;
        }
        let body_end = c.pos();
        let witness_start = c.pos();
        if flags & 1 != 0 {
            let mut any = false;
            for _ in 0..input_count {
                let items = c.count(1, "witness item count")?;
                any |= items > 0;
                for _ in 0..items {
                    c.var_bytes("witness item")?;
                }
            }
            if !any {
                return Err(ErrorKind::SuperfluousWitness { offset: origin }.into());
            }
        }
        let witness_end = c.pos();
        let lock_time = c.u32("lock time")?;
        let len = c.pos();
        let tx = Transaction {
            raw: &bytes[..len],
            version,
            lock_time,
            input_count,
            output_count,
            body: if flags & 1 != 0 {
                (body_start, body_end)
            } else {
                (4, body_end)
            },
            witness: (witness_start, witness_end),
        };
        Ok((tx, len))
    }

    /// The serialized bytes, as parsed.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// Transaction version.
    pub fn version(&self) -> i32 {
        self.version
    }

    /// Lock time.
    pub fn lock_time(&self) -> u32 {
        self.lock_time
    }

    /// Whether it uses the segwit serialization.
    pub fn is_segwit(&self) -> bool {
        self.witness.1 > self.witness.0
    }

    /// Number of inputs.
    pub fn input_count(&self) -> u64 {
        self.input_count
    }

    /// Number of outputs.
    pub fn output_count(&self) -> u64 {
        self.output_count
    }

    /// Size without witness data (what the txid covers).
    pub fn stripped_size(&self) -> usize {
        8 + self.body.1 - self.body.0
    }

    /// The inputs, in order.
    pub fn inputs(&self) -> impl Iterator<Item = TxIn<'a>> + use<'a> {
        let mut c = Cursor::new(&self.raw[self.body.0..self.body.1], 0);
        let count = c.compact_size("input count").unwrap_or(0);
        (0..count).map_while(move |_| read_input(&mut c).ok())
    }

    /// The outputs, in order.
    pub fn outputs(&self) -> impl Iterator<Item = TxOut<'a>> + use<'a> {
        let mut c = Cursor::new(&self.raw[self.body.0..self.body.1], 0);
        let inputs = c.compact_size("input count").unwrap_or(0);
        let skipped = skip_inputs(&mut c, inputs).is_ok();
        let count = if skipped {
            c.compact_size("output count").unwrap_or(0)
        } else {
            0
        };
        (0..count).map_while(move |_| read_output(&mut c).ok())
    }

    /// The witness stack of each input (empty stacks for legacy transactions).
    pub fn witnesses(&self) -> impl Iterator<Item = Vec<&'a [u8]>> + use<'a> {
        let mut c = Cursor::new(&self.raw[self.witness.0..self.witness.1], 0);
        let count = if self.is_segwit() {
            self.input_count
        } else {
            0
        };
        (0..count).map_while(move |_| {
            let items = c.compact_size("witness item count").ok()?;
            (0..items)
                .map(|_| c.var_bytes("witness item").ok())
                .collect()
        })
    }

    /// Whether this is a coinbase: one input spending the null outpoint.
    pub fn is_coinbase(&self) -> bool {
        self.input_count == 1
            && self
                .inputs()
                .next()
                .is_some_and(|i| i.prev_txid == [0; 32] && i.prev_index == u32::MAX)
    }

    /// The txid: double SHA-256 of the serialization without witness.
    pub fn txid(&self) -> [u8; 32] {
        if !self.is_segwit() {
            return sha256d(self.raw);
        }
        let mut h = Sha256::new();
        h.update(&self.raw[..4]);
        h.update(&self.raw[self.body.0..self.body.1]);
        h.update(&self.raw[self.raw.len() - 4..]);
        Sha256::digest(h.finalize()).into()
    }

    /// The wtxid: double SHA-256 of the full serialization.
    pub fn wtxid(&self) -> [u8; 32] {
        sha256d(self.raw)
    }

    /// Serializes the transaction again from its parsed fields (the same
    /// bytes as parsed: parsing accepts only canonical encodings).
    pub fn serialize(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.raw.len());
        out.extend_from_slice(&self.version.to_le_bytes());
        if self.is_segwit() {
            out.extend_from_slice(&[0, 1]);
        }
        write_compact_size(&mut out, self.input_count);
        for input in self.inputs() {
            out.extend_from_slice(&input.prev_txid);
            out.extend_from_slice(&input.prev_index.to_le_bytes());
            write_compact_size(&mut out, input.script_sig.len() as u64);
            out.extend_from_slice(input.script_sig);
            out.extend_from_slice(&input.sequence.to_le_bytes());
        }
        write_compact_size(&mut out, self.output_count);
        for output in self.outputs() {
            out.extend_from_slice(&output.value.to_le_bytes());
            write_compact_size(&mut out, output.script_pubkey.len() as u64);
            out.extend_from_slice(output.script_pubkey);
        }
        for stack in self.witnesses() {
            write_compact_size(&mut out, stack.len() as u64);
            for item in stack {
                write_compact_size(&mut out, item.len() as u64);
                out.extend_from_slice(item);
            }
        }
        out.extend_from_slice(&self.lock_time.to_le_bytes());
        out
    }
}

fn read_input<'a>(c: &mut Cursor<'a>) -> Result<TxIn<'a>> {
    let prev_txid: [u8; 32] = c.take(32, "previous txid")?.try_into().expect("32 bytes");
    let prev_index = c.u32("previous index")?;
    let script_sig = c.var_bytes("script sig")?;
    let sequence = c.u32("sequence")?;
    Ok(TxIn {
        prev_txid,
        prev_index,
        script_sig,
        sequence,
    })
}

fn read_output<'a>(c: &mut Cursor<'a>) -> Result<TxOut<'a>> {
    let value = c.u64("output value")? as i64;
    let script_pubkey = c.var_bytes("script pubkey")?;
    Ok(TxOut {
        value,
        script_pubkey,
    })
}

fn skip_inputs(c: &mut Cursor<'_>, count: u64) -> Result<()> {
    for _ in 0..count {
        c.take(36, "outpoint")?;
        c.var_bytes("script sig")?;
        c.take(4, "sequence")?;
    }
    Ok(())
}

fn skip_outputs(c: &mut Cursor<'_>, count: u64) -> Result<()> {
    for _ in 0..count {
        c.take(8, "output value")?;
        c.var_bytes("script pubkey")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn compact_sizes_must_be_canonical() {
        for (bytes, ok) in [
            (vec![0xfc], Some(0xfc)),
            (vec![0xfd, 0xfc, 0x00], None),
            (vec![0xfd, 0xfd, 0x00], Some(0xfd)),
            (vec![0xfe, 0xff, 0xff, 0x00, 0x00], None),
            (vec![0xfe, 0x00, 0x00, 0x01, 0x00], Some(0x1_0000)),
            (vec![0xfe, 0x01, 0x00, 0x00, 0x02], None), // above MAX_SIZE
            (vec![0xff, 0, 0, 0, 0, 1, 0, 0, 0], None),
            (vec![0xfd, 0x00], None),
        ] {
            let got = Cursor::new(&bytes, 0).compact_size("test").ok();
            assert_eq!(got, ok, "{bytes:02x?}");
        }
    }

    #[test]
    fn empty_transaction_quirk() {
        // version, empty vin, flag 0 (no outputs read), locktime.
        let bytes = hex("010000000000ffffffff");
        let (tx, len) = Transaction::parse(&bytes, 0).unwrap();
        assert_eq!(len, 10);
        assert_eq!((tx.input_count(), tx.output_count()), (0, 0));
        assert_eq!(tx.serialize(), bytes);
    }

    #[test]
    fn flags_and_witness_rules() {
        // Unknown flag 2.
        let bytes = hex("0100000000020000000000");
        assert!(matches!(
            Transaction::parse(&bytes, 7).unwrap_err().kind(),
            ErrorKind::UnknownTxFlags {
                offset: 12,
                flags: 2
            }
        ));
        // Segwit flag with one input whose witness stack is empty: superfluous.
        let mut tx = hex("01000000");
        tx.extend_from_slice(&[0, 1, 1]);
        tx.extend_from_slice(&[0; 36]);
        tx.extend_from_slice(&[0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        tx.extend_from_slice(&[0]);
        tx.extend_from_slice(&[0; 4]);
        assert!(matches!(
            Transaction::parse(&tx, 0).unwrap_err().kind(),
            ErrorKind::SuperfluousWitness { .. }
        ));
    }

    #[test]
    fn counts_are_checked_before_use() {
        // One billion inputs claimed with 10 bytes left.
        let bytes = hex("01000000fe00ca9a3b00000000000000000000");
        assert!(matches!(
            Transaction::parse(&bytes, 0).unwrap_err().kind(),
            ErrorKind::SizeTooLarge { offset: 4, .. }
        ));
    }
}
