//! Lowercase hex, both ways.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Append the lowercase hex of `bytes` to `out`.
pub(crate) fn push(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
}

/// Decode hex digits (either case) into `out`; `Err(i)` names the first
/// digit that is not hex (or `text.len()` for an odd count).
pub(crate) fn decode_into(text: &[u8], out: &mut Vec<u8>) -> Result<(), usize> {
    if text.len() % 2 == 1 {
        return Err(text.len());
    }
    out.reserve(text.len() / 2);
    for (i, pair) in text.chunks_exact(2).enumerate() {
        let hi = nibble(pair[0]).ok_or(2 * i)?;
        let lo = nibble(pair[1]).ok_or(2 * i + 1)?;
        out.push(hi << 4 | lo);
    }
    Ok(())
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_names_the_bad_digit() {
        let mut s = String::new();
        push(&mut s, &[0x00, 0xab, 0xff]);
        assert_eq!(s, "00abff");
        let mut out = Vec::new();
        decode_into(b"00ABff", &mut out).unwrap();
        assert_eq!(out, [0x00, 0xab, 0xff]);
        assert_eq!(decode_into(b"0g", &mut Vec::new()), Err(1));
        assert_eq!(decode_into(b"abc", &mut Vec::new()), Err(3));
        assert_eq!(decode_into(b"", &mut Vec::new()), Ok(()));
    }
}
