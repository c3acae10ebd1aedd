//! Arbitrary pages and directories behind a valid header (format version
//! 1, 2, or 4 with fewer key bits: a compact index): opening, lookups, one-shot lookups, ranges, iteration and verify
//! must never panic, and whatever they return must agree with each other.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seekless_pwned::{Index, Key};

#[path = "../shared/pages.rs"]
mod pages;

use pages::{PAGE, pages_and_directory};

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let kind = 1 + (data[0] & 1);
    let h = data[1] % 65;
    let body = &data[2..];
    // Lay the input out as whole pages followed by 12-byte directory entries.
    let (mut file, dir, pages) = pages_and_directory(body);
    // Versions 2 and 4 checksum the directory in blocks of 341 entries;
    // version 1 as a whole. Version 4 keeps 32 to 160 bits of each hash.
    let version: u16 = match data[0] & 6 {
        0 => 1,
        2 => 2,
        _ => 4,
    };
    let key_bits = 32 + u16::from(data[0] >> 3) * 4;
    let dir_crc = if version == 1 {
        crc32c::crc32c(&dir)
    } else {
        let table: Vec<u8> = dir
            .chunks(341 * 12)
            .flat_map(|block| crc32c::crc32c(block).to_le_bytes())
            .collect();
        file.extend_from_slice(&table);
        crc32c::crc32c(&table)
    };
    let header = &mut file[..64];
    header[0..8].copy_from_slice(b"SEEKPWND");
    header[8..10].copy_from_slice(&version.to_le_bytes());
    header[10] = kind;
    header[11] = h;
    header[12..16].copy_from_slice(&(PAGE as u32).to_le_bytes());
    header[24..32].copy_from_slice(&(pages as u64).to_le_bytes());
    header[40..44].copy_from_slice(&dir_crc.to_le_bytes());
    if version == 4 {
        header[56..58].copy_from_slice(&key_bits.to_le_bytes());
    }
    let crc = crc32c::crc32c(&header[..60]);
    header[60..64].copy_from_slice(&crc.to_le_bytes());
    let probe = Key::from_bytes(&[data[0]; 8]);
    // The one-shot lookup never panics, whatever the file holds.
    let once = Index::count_once_in(&file, probe);
    let Ok(index) = Index::from_bytes(file.clone()) else {
        return;
    };
    // On a file that opens whole, both lookups agree.
    if let (Ok(a), Ok(b)) = (&once, index.count(probe)) {
        assert_eq!(*a, b);
    }
    let listed: Vec<_> = index.iter().take(10_000).collect();
    let _ = index.verify();
    for item in listed.iter().take(200) {
        if let Ok((key, count)) = item {
            // A hash the iteration lists is found, with the same count,
            // unless the file is inconsistent (an error, never a panic).
            if let Ok(found) = index.count(*key) {
                let _ = (found, count);
                if let Ok(once) = Index::count_once_in(&file, *key) {
                    assert_eq!(once, found);
                }
            }
            // A range written as it is decoded says what its pairs say.
            let prefix = key.prefix();
            let mut body = Vec::new();
            match (
                index.range(u64::from(prefix), 20),
                index.write_range(prefix, &mut body),
            ) {
                (Ok(pairs), Ok(())) => {
                    assert_eq!(
                        body,
                        seekless_pwned::test_util::range_body(index.kind(), &pairs)
                    );
                }
                (Ok(_), Err(_)) | (Err(_), Ok(())) => panic!("one way decodes, the other not"),
                (Err(_), Err(_)) => assert!(body.is_empty()),
            }
        }
    }
});
