//! Core's compressed coins (`compressor.cpp`, `Coin::Serialize`): how its
//! chainstate database and `dumptxoutset` store an unspent output. A coin
//! is `VARINT(height * 2 + coinbase)`, then `VARINT(CompressAmount(value))`,
//! then the script: the six common kinds in 21 or 33 bytes, any other as
//! `VARINT(length + 6)` and its bytes.

use crate::coin::{
    Coin, MAX_SCRIPT_SIZE, OP_RETURN, VARINT_MAX_LEN, is_unspendable, read_varint, write_varint,
};
use crate::error::{ErrorKind, Result};
use crate::secp256k1;

/// Core's `MAX_MONEY`: 21 million bitcoin in satoshis. A coin above it is
/// refused when read, as Core's snapshot loader refuses it.
pub const MAX_MONEY: u64 = 21_000_000 * 100_000_000;

/// The number of special script codes (0 to 5); a plain script's length is
/// stored plus this.
const SPECIAL_SCRIPTS: u64 = 6;

const OP_DUP: u8 = 0x76;
const OP_HASH160: u8 = 0xa9;
const OP_EQUALVERIFY: u8 = 0x88;
const OP_EQUAL: u8 = 0x87;
const OP_CHECKSIG: u8 = 0xac;

/// Core's `CompressAmount`: trailing decimal zeros (up to 9) go into the
/// last digit of the result, so round amounts take one or two bytes.
pub fn compress_amount(mut value: u64) -> u64 {
    if value == 0 {
        return 0;
    }
    let mut exponent = 0;
    while value.is_multiple_of(10) && exponent < 9 {
        value /= 10;
        exponent += 1;
    }
    if exponent < 9 {
        let digit = value % 10;
        value /= 10;
        // Core's unsigned arithmetic: no amount of money comes near wrapping.
        1u64.wrapping_add(
            (value.wrapping_mul(9) + digit - 1)
                .wrapping_mul(10)
                .wrapping_add(exponent),
        )
    } else {
        1u64.wrapping_add((value - 1).wrapping_mul(10))
            .wrapping_add(9)
    }
}

/// Core's `DecompressAmount`, the inverse of [`compress_amount`] (wrapping
/// as Core's unsigned arithmetic does for values no amount compresses to).
pub fn decompress_amount(mut x: u64) -> u64 {
    if x == 0 {
        return 0;
    }
    x -= 1;
    let mut exponent = x % 10;
    x /= 10;
    let mut value = if exponent < 9 {
        let digit = x % 9 + 1;
        x /= 9;
        x.wrapping_mul(10).wrapping_add(digit)
    } else {
        x.wrapping_add(1)
    };
    while exponent > 0 {
        value = value.wrapping_mul(10);
        exponent -= 1;
    }
    value
}

/// Core's `CompressScript`: the special form of `script` (its code byte,
/// then 20 or 32 bytes) if it is one of the six kinds, else `None`.
/// Uncompressed pay-to-pubkey is special only when its key is on the curve.
fn special_form(script: &[u8]) -> Option<([u8; 33], usize)> {
    let mut out = [0u8; 33];
    match script {
        [
            OP_DUP,
            OP_HASH160,
            20,
            hash @ ..,
            OP_EQUALVERIFY,
            OP_CHECKSIG,
        ] if hash.len() == 20 => {
            out[1..21].copy_from_slice(hash);
            Some((out, 21))
        }
        [OP_HASH160, 20, hash @ .., OP_EQUAL] if hash.len() == 20 => {
            out[0] = 0x01;
            out[1..21].copy_from_slice(hash);
            Some((out, 21))
        }
        [33, key @ .., OP_CHECKSIG] if key.len() == 33 && matches!(key[0], 0x02 | 0x03) => {
            out.copy_from_slice(key);
            Some((out, 33))
        }
        [65, key @ .., OP_CHECKSIG] if key.len() == 65 => {
            let key: &[u8; 65] = key.try_into().expect("65 bytes");
            if !secp256k1::is_valid_uncompressed(key) {
                return None;
            }
            out[0] = 0x04 | (key[64] & 0x01);
            out[1..].copy_from_slice(&key[1..33]);
            Some((out, 33))
        }
        _ => None,
    }
}

/// Appends Core's `ScriptCompression` of `script`.
pub(crate) fn write_script(script: &[u8], out: &mut Vec<u8>) {
    if let Some((special, len)) = special_form(script) {
        out.extend_from_slice(&special[..len]);
        return;
    }
    push_varint(script.len() as u64 + SPECIAL_SCRIPTS, out);
    out.extend_from_slice(script);
}

fn push_varint(value: u64, out: &mut Vec<u8>) {
    let mut buf = [0u8; VARINT_MAX_LEN];
    let len = write_varint(value, &mut buf);
    out.extend_from_slice(&buf[..len]);
}

/// Where compressed coins are read from: bytes in order, with their offset
/// for errors.
pub(crate) trait ByteSource {
    /// The offset of the next byte.
    fn offset(&self) -> u64;
    /// Fills `buf`, or fails with `UnexpectedEof` naming `what`.
    fn read_into(&mut self, buf: &mut [u8], what: &'static str) -> Result<()>;
    /// Passes over `len` bytes.
    fn skip(&mut self, len: u64, what: &'static str) -> Result<()>;

    fn byte(&mut self, what: &'static str) -> Result<u8> {
        let mut b = [0u8; 1];
        self.read_into(&mut b, what)?;
        Ok(b[0])
    }

    fn varint(&mut self, max: u64, what: &'static str) -> Result<u64> {
        let offset = self.offset();
        read_varint(|| self.byte(what), max, offset)
    }
}

/// Reads Core's `ScriptCompression` into `script` (cleared first), as
/// `ScriptCompression::Unser` does: a plain script longer than
/// [`MAX_SCRIPT_SIZE`] is passed over and read as a lone `OP_RETURN`. A
/// compressed uncompressed-key whose x is not on the curve is refused (Core
/// would leave the script empty). Returns whether the bytes were in the
/// form [`write_script`] writes for the script read.
pub(crate) fn read_script(src: &mut impl ByteSource, script: &mut Vec<u8>) -> Result<bool> {
    script.clear();
    let code = src.varint(u32::MAX as u64, "script")?;
    if code < SPECIAL_SCRIPTS {
        let at = src.offset();
        let mut payload = [0u8; 32];
        let payload = &mut payload[..if code < 2 { 20 } else { 32 }];
        src.read_into(payload, "compressed script")?;
        match code {
            0 => {
                script.extend_from_slice(&[OP_DUP, OP_HASH160, 20]);
                script.extend_from_slice(payload);
                script.extend_from_slice(&[OP_EQUALVERIFY, OP_CHECKSIG]);
            }
            1 => {
                script.extend_from_slice(&[OP_HASH160, 20]);
                script.extend_from_slice(payload);
                script.push(OP_EQUAL);
            }
            2 | 3 => {
                script.extend_from_slice(&[33, code as u8]);
                script.extend_from_slice(payload);
                script.push(OP_CHECKSIG);
            }
            _ => {
                let x: &[u8; 32] = (&*payload).try_into().expect("32 bytes");
                let key = secp256k1::decompress(x, code == 5)
                    .ok_or(ErrorKind::BadCompressedKey { offset: at })?;
                script.push(65);
                script.extend_from_slice(&key);
                script.push(OP_CHECKSIG);
            }
        }
        return Ok(true);
    }
    let len = code - SPECIAL_SCRIPTS;
    if len > MAX_SCRIPT_SIZE as u64 {
        src.skip(len, "script")?;
        script.push(OP_RETURN);
        return Ok(false);
    }
    script.resize(len as usize, 0);
    src.read_into(script, "script")?;
    Ok(special_form(script).is_none())
}

impl Coin {
    /// Appends the coin as Core's `Coin::Serialize` writes it (its
    /// chainstate database value and `dumptxoutset` coin): `VARINT(height *
    /// 2 + coinbase)`, `VARINT(CompressAmount(value))`, the compressed
    /// script.
    pub fn write_compressed(&self, out: &mut Vec<u8>) {
        push_varint(self.code() as u64, out);
        push_varint(compress_amount(self.value), out);
        write_script(&self.script, out);
    }

    /// Reads a coin written by [`Coin::write_compressed`] (or by Core) from
    /// the start of `bytes`; returns it and the bytes it took. Offsets in
    /// errors count from `origin`. Refuses a value above [`MAX_MONEY`].
    pub fn read_compressed(bytes: &[u8], origin: u64) -> Result<(Coin, usize)> {
        let mut src = SliceSource {
            bytes,
            pos: 0,
            origin,
        };
        let mut coin = Coin {
            value: 0,
            height: 0,
            coinbase: false,
            script: Vec::new(),
        };
        read_coin(&mut src, &mut coin)?;
        Ok((coin, src.pos))
    }
}

/// Reads one compressed coin into `coin`; returns whether its bytes were in
/// the form [`Coin::write_compressed`] writes for a coin Core's UTXO set can
/// hold (not for an unspendable script).
pub(crate) fn read_coin(src: &mut impl ByteSource, coin: &mut Coin) -> Result<bool> {
    let offset = src.offset();
    let code = src.varint(u32::MAX as u64, "coin code")?;
    coin.height = (code >> 1) as u32;
    coin.coinbase = code & 1 == 1;
    let compressed = src.varint(u64::MAX, "coin amount")?;
    coin.value = decompress_amount(compressed);
    if coin.value > MAX_MONEY {
        return Err(ErrorKind::AmountTooLarge {
            offset,
            value: coin.value,
        }
        .into());
    }
    let canonical = read_script(src, &mut coin.script)?;
    // Core never writes an unspendable coin: it is not in its UTXO set.
    Ok(canonical && !is_unspendable(&coin.script))
}

/// A [`ByteSource`] over a slice.
pub(crate) struct SliceSource<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) pos: usize,
    pub(crate) origin: u64,
}

impl ByteSource for SliceSource<'_> {
    fn offset(&self) -> u64 {
        self.origin + self.pos as u64
    }

    fn read_into(&mut self, buf: &mut [u8], what: &'static str) -> Result<()> {
        let end = self.pos + buf.len();
        if end > self.bytes.len() {
            return Err(ErrorKind::UnexpectedEof {
                offset: self.offset() as usize,
                what,
            }
            .into());
        }
        buf.copy_from_slice(&self.bytes[self.pos..end]);
        self.pos = end;
        Ok(())
    }

    fn skip(&mut self, len: u64, what: &'static str) -> Result<()> {
        if len > (self.bytes.len() - self.pos) as u64 {
            return Err(ErrorKind::UnexpectedEof {
                offset: self.offset() as usize,
                what,
            }
            .into());
        }
        self.pos += len as usize;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COIN: u64 = 100_000_000;
    const CENT: u64 = 1_000_000;

    #[test]
    fn amounts_match_core() {
        // compress_tests.cpp's `compress_amounts` pairs.
        for (value, compressed) in [
            (0, 0x0),
            (1, 0x1),
            (CENT, 0x7),
            (COIN, 0x9),
            (50 * COIN, 0x32),
            (21_000_000 * COIN, 0x140_6f40),
        ] {
            assert_eq!(compress_amount(value), compressed, "{value}");
            assert_eq!(decompress_amount(compressed), value, "{compressed:#x}");
        }
        // And its loops: every multiple of a unit round-trips, and every
        // small code decodes to an amount that compresses back to it.
        for unit in [1, CENT, COIN, 50 * COIN] {
            for i in 1..=100_000u64.min(MAX_MONEY / unit) {
                assert_eq!(decompress_amount(compress_amount(i * unit)), i * unit);
            }
        }
        for code in 0..100_000 {
            assert_eq!(compress_amount(decompress_amount(code)), code);
        }
        // Beyond any amount, both wrap as Core's unsigned arithmetic does.
        compress_amount(u64::MAX);
        decompress_amount(u64::MAX);
    }

    fn compressed(script: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_script(script, &mut out);
        out
    }

    fn round_trip(script: &[u8]) -> (Vec<u8>, bool) {
        let bytes = compressed(script);
        let mut src = SliceSource {
            bytes: &bytes,
            pos: 0,
            origin: 0,
        };
        let mut back = Vec::new();
        let canonical = read_script(&mut src, &mut back).unwrap();
        assert_eq!(src.pos, bytes.len());
        (back, canonical)
    }

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    const GENESIS_KEY: &str = "04678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f61deb6\
                               49f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5f";

    fn p2pk(key: &[u8]) -> Vec<u8> {
        let mut script = vec![key.len() as u8];
        script.extend_from_slice(key);
        script.push(OP_CHECKSIG);
        script
    }

    #[test]
    fn special_scripts_compress_and_come_back() {
        let hash = [0x5a; 20];
        let mut p2pkh = vec![OP_DUP, OP_HASH160, 20];
        p2pkh.extend_from_slice(&hash);
        p2pkh.extend_from_slice(&[OP_EQUALVERIFY, OP_CHECKSIG]);
        let mut p2sh = vec![OP_HASH160, 20];
        p2sh.extend_from_slice(&hash);
        p2sh.push(OP_EQUAL);
        let genesis_key = hex(&GENESIS_KEY.replace(' ', ""));
        let mut even_key = genesis_key.clone();
        even_key[0] = 0x02;
        even_key.truncate(33);
        let mut odd_key = even_key.clone();
        odd_key[0] = 0x03;
        // The genesis key's y is odd (its last byte 5f).
        for (script, first, len) in [
            (p2pkh, 0x00, 21),
            (p2sh, 0x01, 21),
            (p2pk(&even_key), 0x02, 33),
            (p2pk(&odd_key), 0x03, 33),
            (p2pk(&genesis_key), 0x05, 33),
        ] {
            let bytes = compressed(&script);
            assert_eq!((bytes[0], bytes.len()), (first, len));
            assert_eq!(round_trip(&script), (script, true));
        }
        // The even-y twin of the genesis key compresses to code 4.
        let twin = secp256k1::decompress(&genesis_key[1..33].try_into().unwrap(), false).unwrap();
        let script = p2pk(&twin);
        assert_eq!(compressed(&script)[0], 0x04);
        assert_eq!(round_trip(&script), (script, true));
    }

    #[test]
    fn other_scripts_are_stored_plain() {
        let mut off_curve = hex(&GENESIS_KEY.replace(' ', ""));
        off_curve[64] ^= 1;
        let mut near_p2pkh = vec![OP_DUP, OP_HASH160, 20];
        near_p2pkh.extend_from_slice(&[1; 20]);
        near_p2pkh.extend_from_slice(&[OP_EQUALVERIFY, OP_EQUAL]);
        let mut compressed_key_04 = vec![0x04];
        compressed_key_04.extend_from_slice(&[7; 32]);
        for script in [
            vec![],
            vec![0x51],
            p2pk(&off_curve),
            near_p2pkh,
            p2pk(&compressed_key_04),
            vec![
                0x00, 0x14, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9,
            ],
            vec![0x6a; MAX_SCRIPT_SIZE],
        ] {
            let bytes = compressed(&script);
            let mut varint = [0u8; VARINT_MAX_LEN];
            let len = write_varint(script.len() as u64 + 6, &mut varint);
            assert_eq!(bytes[..len], varint[..len]);
            assert_eq!(bytes.len(), len + script.len());
            assert_eq!(round_trip(&script), (script, true));
        }
    }

    fn read(bytes: &[u8]) -> Result<(Vec<u8>, bool, usize)> {
        let mut src = SliceSource {
            bytes,
            pos: 0,
            origin: 100,
        };
        let mut script = vec![1, 2, 3];
        let canonical = read_script(&mut src, &mut script)?;
        Ok((script, canonical, src.pos))
    }

    #[test]
    fn reading_mirrors_core() {
        // A plain script over MAX_SCRIPT_SIZE is passed over and read as
        // OP_RETURN, as ScriptCompression::Unser does.
        let mut long = Vec::new();
        push_varint(MAX_SCRIPT_SIZE as u64 + 1 + 6, &mut long);
        long.extend_from_slice(&[0x51; MAX_SCRIPT_SIZE + 1]);
        assert_eq!(read(&long).unwrap(), (vec![OP_RETURN], false, long.len()));
        // A special script written plain reads as itself, not canonical.
        let mut plain = vec![25 + 6, OP_DUP, OP_HASH160, 20];
        plain.extend_from_slice(&[3; 20]);
        plain.extend_from_slice(&[OP_EQUALVERIFY, OP_CHECKSIG]);
        let (script, canonical, _) = read(&plain).unwrap();
        assert_eq!((&script[..], canonical), (&plain[1..], false));
        // An x off the curve under code 4 or 5 is refused at its offset.
        let mut bad = vec![0x04];
        bad.extend_from_slice(&{
            let mut x = [0u8; 32];
            x[31] = 5;
            x
        });
        assert!(matches!(
            read(&bad).unwrap_err().kind(),
            ErrorKind::BadCompressedKey { offset: 101 }
        ));
        // Truncations and an oversized length code.
        for cut in [&[][..], &[0x00, 1, 2], &[0x03; 20], &[7 + 6, 1]] {
            assert!(matches!(
                read(cut).unwrap_err().kind(),
                ErrorKind::UnexpectedEof { .. }
            ));
        }
        assert!(matches!(
            read(&[0x8e, 0xfe, 0xfe, 0xfe, 0xff, 0x00])
                .unwrap_err()
                .kind(),
            ErrorKind::VarIntTooLarge { offset: 100 }
        ));
    }

    #[test]
    fn coins_round_trip_and_refuse_too_much_money() {
        let coin = Coin {
            value: 50 * COIN,
            height: 0,
            coinbase: true,
            script: p2pk(&hex(&GENESIS_KEY.replace(' ', ""))),
        };
        let mut bytes = Vec::new();
        coin.write_compressed(&mut bytes);
        // code 1, amount 0x32, then code 5 and x.
        assert_eq!(&bytes[..3], &[0x01, 0x32, 0x05]);
        assert_eq!(bytes.len(), 3 + 32);
        assert_eq!(
            Coin::read_compressed(&bytes, 0).unwrap(),
            (coin, bytes.len())
        );
        // An amount code that decompresses above MAX_MONEY.
        let mut rich = vec![0x00];
        push_varint(compress_amount(MAX_MONEY + 1), &mut rich);
        rich.push(6);
        assert!(matches!(
            Coin::read_compressed(&rich, 7).unwrap_err().kind(),
            ErrorKind::AmountTooLarge { offset: 7, .. }
        ));
    }
}
