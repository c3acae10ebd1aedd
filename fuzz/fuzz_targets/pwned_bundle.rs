//! Bundles are untrusted input: the push decoder, fed arbitrary bytes in
//! arbitrary chunkings, never panics, hands out only what its bounds
//! allow, and gives what the same bytes pushed at once give; the reader
//! over them agrees.
//!
//! Input: a mode byte, a seed byte (for the chunking), then the bytes.
//! Mode bit 0 clear: the bytes are the bundle file. Set: they are the
//! content, which the target gzips in members cut where the seed says
//! (so that mutations reach the content's checks through valid gzip);
//! with bit 1 too, the last 32 bytes are first replaced by the SHA-256 of
//! those before (so that they reach the end as well).
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use seekless_pwned::RANGES;
use seekless_pwned::test_util::{BundleDecoder, BundleItem, BundleReader, MAX_RANGE_BODY};
use sha2::{Digest, Sha256};

/// A small generator for piece sizes and member cuts.
struct Pieces(u64);

impl Pieces {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Mostly a few bytes, sometimes up to 64 KiB.
    fn size(&mut self) -> usize {
        let r = self.next();
        if r % 4 == 0 {
            1 + (r >> 8) as usize % 65_536
        } else {
            1 + (r >> 8) as usize % 37
        }
    }
}

/// What decoding gave: a digest of the items (keeping them all could hold
/// a million entries), how many, and the verdict.
#[derive(Debug, PartialEq)]
struct Decoded {
    items: usize,
    digest: [u8; 32],
    end: Result<(), String>,
}

fn note(sha: &mut Sha256, item: &BundleItem) {
    match item {
        BundleItem::Header(h) => {
            sha.update(b"H");
            sha.update(h.old_identity);
            sha.update(h.new_identity);
            sha.update(h.url.as_bytes());
        }
        BundleItem::Entry(e) => {
            // Every size within the format's bounds.
            assert!(e.prefix < RANGES);
            if let Some(v) = &e.validator {
                assert!((1..=255).contains(&v.len()));
                sha.update([v.len() as u8]);
                sha.update(v);
            }
            if let Some(lines) = &e.lines {
                assert!(lines.len() <= MAX_RANGE_BODY);
                sha.update((lines.len() as u32).to_le_bytes());
                sha.update(lines);
            }
            sha.update(e.prefix.to_le_bytes());
        }
        BundleItem::End => sha.update(b"E"),
    }
}

fn decode(file: &[u8], mut size: impl FnMut() -> usize) -> Decoded {
    let mut decoder = BundleDecoder::new();
    let mut sha = Sha256::new();
    let mut items = 0;
    let mut from = 0;
    let mut last_prefix = None;
    while from < file.len() {
        let to = (from + size()).min(file.len());
        let mut piece = &file[from..to];
        from = to;
        loop {
            match decoder.decode(piece) {
                Ok((used, item)) => {
                    assert!(used <= piece.len());
                    piece = &piece[used..];
                    let Some(item) = item else {
                        assert!(piece.is_empty(), "None takes every byte");
                        break;
                    };
                    if let BundleItem::Entry(e) = &item {
                        assert!(last_prefix < Some(e.prefix), "entries in order");
                        last_prefix = Some(e.prefix);
                    }
                    items += 1;
                    note(&mut sha, &item);
                }
                Err(e) => {
                    return Decoded {
                        items,
                        digest: sha.finalize().into(),
                        end: Err(e.to_string()),
                    };
                }
            }
        }
    }
    let end = decoder.finish().map_err(|e| e.to_string());
    Decoded {
        items,
        digest: sha.finalize().into(),
        end,
    }
}

fuzz_target!(|data: &[u8]| {
    let [mode, seed, rest @ ..] = data else {
        return;
    };
    let mut pieces = Pieces(0x9e37_79b9_7f4a_7c15 ^ (u64::from(*seed) << 32 | rest.len() as u64));
    let file = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        let mut content = rest.to_vec();
        if mode & 2 != 0 && content.len() >= 32 {
            let at = content.len() - 32;
            let sum: [u8; 32] = Sha256::digest(&content[..at]).into();
            content[at..].copy_from_slice(&sum);
        }
        let mut file = Vec::new();
        let mut at = 0;
        loop {
            let end = (at + pieces.size() * 8).min(content.len());
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&content[at..end]).unwrap();
            file.extend_from_slice(&gz.finish().unwrap());
            at = end;
            if at == content.len() {
                break;
            }
        }
        file
    };
    let whole = decode(&file, || usize::MAX / 2);
    let chunked = decode(&file, || pieces.size());
    assert_eq!(whole, chunked, "the same bytes, another chunking");
    // The reader: the same verdict.
    let read = BundleReader::new(&file[..]).and_then(|mut reader| {
        while reader.next_entry()?.is_some() {}
        reader.finish()
    });
    assert_eq!(read.map_err(|e| e.to_string()), whole.end);
});
