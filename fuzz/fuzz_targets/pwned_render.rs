//! The range renderers against the portable one: every renderer this
//! processor has (AVX-512, AVX2, NEON) must write the same bytes, or the
//! same error with the buffer as it was, for
//! - arbitrary pages behind a valid header and directory (their checksums
//!   made right, so that they are decoded), SHA-1 or NTLM, 0 to 40 bucket
//!   bits (20 and more: the ranges AVX-512 and AVX2 write in batches);
//! - arbitrary pairs (hashes crowded into four ranges, counts of every
//!   length up to 2^64 - 1), as a range body and as an index of them whose
//!   layout is chosen for 1 to 2^40 hashes.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use seekless_pwned::test_util::{
    Renderer, SortedWriter, Words, write_range_body_by, write_range_by,
};
use seekless_pwned::{Index, Key, Kind};

#[path = "../shared/pages.rs"]
mod pages;

use pages::{PAGE, pages_and_directory};

/// The renderers to compare with the portable one.
fn fast() -> Vec<Renderer> {
    Renderer::ALL
        .into_iter()
        .filter(|&r| r != Renderer::Portable && r.here())
        .collect()
}

/// Range `prefix` of `index` written by each renderer: the portable one's
/// answer, bytes or error, from every one.
fn same_range(index: &Index, prefix: u32) {
    let mut want = b"before".to_vec();
    let portable = write_range_by(index, Renderer::Portable, prefix, &mut want);
    for renderer in fast() {
        let mut got = b"before".to_vec();
        let done = write_range_by(index, renderer, prefix, &mut got);
        assert_eq!(
            done.is_ok(),
            portable.is_ok(),
            "{renderer:?} range {prefix:05X}"
        );
        assert!(got == want, "{renderer:?} range {prefix:05X}");
    }
    if portable.is_err() {
        assert_eq!(want, b"before");
    }
}

fn pages(data: &[u8]) {
    let kind = 1 + (data[0] >> 1 & 1);
    // Any layout, and mostly those batches are for.
    let h = if data[1] <= 40 {
        data[1]
    } else {
        20 + data[1] % 21
    };
    let body = &data[2..];
    let (mut file, dir, pages) = pages_and_directory(body);
    if pages == 0 {
        return;
    }
    let table: Vec<u8> = dir
        .chunks(341 * 12)
        .flat_map(|block| crc32c::crc32c(block).to_le_bytes())
        .collect();
    file.extend_from_slice(&table);
    let dir_crc = crc32c::crc32c(&table);
    let header = &mut file[..64];
    header[0..8].copy_from_slice(b"SEEKPWND");
    header[8..10].copy_from_slice(&2u16.to_le_bytes());
    header[10] = kind;
    header[11] = h;
    header[12..16].copy_from_slice(&(PAGE as u32).to_le_bytes());
    header[24..32].copy_from_slice(&(pages as u64).to_le_bytes());
    header[40..44].copy_from_slice(&dir_crc.to_le_bytes());
    let crc = crc32c::crc32c(&header[..60]);
    header[60..64].copy_from_slice(&crc.to_le_bytes());
    let Ok(index) = Index::from_bytes(file) else {
        return;
    };
    // The ranges of each page's first bucket (as its directory says), and
    // of the hashes listed.
    for i in 0..pages {
        let first = u64::from_le_bytes(dir[12 * i..12 * i + 8].try_into().unwrap()) & !(1 << 63);
        let prefix = if h >= 20 {
            first >> (h - 20)
        } else {
            first << (20 - h)
        };
        same_range(&index, (prefix & 0xFFFFF) as u32);
    }
    for item in index.iter().take(2_000).step_by(97).flatten() {
        same_range(&index, item.0.prefix());
    }
}

fn pairs(data: &[u8]) {
    let kind = if data[0] & 2 == 0 {
        Kind::Sha1
    } else {
        Kind::Ntlm
    };
    let expected = 1u64 << (data[1] % 41);
    let prefixes: Vec<u64> = data[2..]
        .iter()
        .take(4)
        .map(|&b| u64::from(b) * 4099 % (1 << 20))
        .collect();
    if prefixes.len() < 4 {
        return;
    }
    // Eight bytes a pair: its range, its digits' length, six of its hash.
    let mut items: Vec<(Key, u64)> = data[6..]
        .chunks_exact(8)
        .map(|b| {
            let seed = u64::from_le_bytes(b.try_into().unwrap());
            let mut x = seed;
            let mut next = || {
                x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = x;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^ (z >> 31)
            };
            let words = Words {
                hi: prefixes[usize::from(b[0] % 4)] << 44 | next() >> 20,
                mid: next(),
                lo: if kind == Kind::Sha1 { next() as u32 } else { 0 },
            };
            let count = (next() >> (b[1] % 64)).max(1);
            (words.key(), count)
        })
        .collect();
    items.sort_by_key(|&(key, _)| key);
    items.dedup_by_key(|&mut (key, _)| key);
    // As a body, range by range.
    for &prefix in &prefixes {
        let range: Vec<(Key, u64)> = items
            .iter()
            .copied()
            .filter(|(k, _)| u64::from(k.prefix()) == prefix)
            .collect();
        let mut want = Vec::new();
        write_range_body_by(Renderer::Portable, kind, &range, &mut want);
        for renderer in fast() {
            let mut got = Vec::new();
            write_range_body_by(renderer, kind, &range, &mut got);
            assert!(got == want, "{renderer:?} body");
        }
    }
    // As an index.
    let Ok(mut writer) = SortedWriter::new(Cursor::new(Vec::new()), kind, Some(expected)) else {
        return;
    };
    for &(key, count) in &items {
        writer.push(key, count).unwrap();
    }
    let (out, _) = writer.finish(None).unwrap();
    let index = Index::from_bytes(out.into_inner()).unwrap();
    for &prefix in &prefixes {
        for p in [prefix.saturating_sub(1), prefix, (prefix + 1) & 0xFFFFF] {
            same_range(&index, p as u32);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    if data[0] & 1 == 0 {
        pages(data);
    } else {
        pairs(data);
    }
});
