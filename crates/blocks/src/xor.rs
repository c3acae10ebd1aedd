//! Block-file obfuscation (Core 28+): an 8-byte key XORed by file offset.

use std::path::Path;

use crate::error::{ErrorKind, Result};

/// The 8-byte XOR key of a blocks directory; all zeros means plain files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct XorKey(pub [u8; 8]);

impl XorKey {
    /// Whether the key leaves bytes unchanged.
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 8]
    }

    /// Parses 16 hex digits, as in `--xor-key 0123456789abcdef` (file byte order).
    pub fn from_hex(text: &str) -> Result<XorKey> {
        Ok(XorKey(crate::hex::parse_hex::<8>(text)?))
    }

    /// Reads `xor.dat` from a directory; a missing file means no obfuscation.
    pub fn from_dir(dir: &Path) -> Result<XorKey> {
        let path = dir.join("xor.dat");
        match std::fs::read(&path) {
            Ok(bytes) => {
                let key: [u8; 8] =
                    bytes
                        .as_slice()
                        .try_into()
                        .map_err(|_| ErrorKind::BadXorFile {
                            path: path.clone(),
                            len: bytes.len() as u64,
                        })?;
                Ok(XorKey(key))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(XorKey::default()),
            Err(e) => Err(crate::Error::io(path, "read", e)),
        }
    }

    /// XORs `buf`, which starts at `file_offset` in its file, with the key.
    pub fn apply(&self, buf: &mut [u8], file_offset: u64) {
        if self.is_zero() {
            return;
        }
        let mut rotated = [0u8; 8];
        for (i, byte) in rotated.iter_mut().enumerate() {
            *byte = self.0[((file_offset as usize) + i) % 8];
        }
        let word = u64::from_ne_bytes(rotated);
        let mut chunks = buf.chunks_exact_mut(8);
        for chunk in &mut chunks {
            let value = u64::from_ne_bytes(chunk.try_into().expect("8-byte chunk")) ^ word;
            chunk.copy_from_slice(&value.to_ne_bytes());
        }
        for (i, byte) in chunks.into_remainder().iter_mut().enumerate() {
            *byte ^= rotated[i];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xor_by_offset_matches_bytewise() {
        let key = XorKey([1, 2, 3, 4, 5, 6, 7, 8]);
        let data: Vec<u8> = (0..100u8).collect();
        for start in 0..20u64 {
            let mut buf = data.clone();
            key.apply(&mut buf[..], start);
            for (i, (&a, &b)) in buf.iter().zip(&data).enumerate() {
                assert_eq!(a, b ^ key.0[(start as usize + i) % 8]);
            }
        }
    }

    #[test]
    fn hex_keys() {
        assert_eq!(
            XorKey::from_hex("0102030405060708").unwrap().0,
            [1, 2, 3, 4, 5, 6, 7, 8]
        );
        assert!(XorKey::from_hex("01020304050607").is_err());
        assert!(XorKey::from_hex("010203040506070g").is_err());
    }
}
