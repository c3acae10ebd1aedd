//! Hostile exhash files: opening must return an error or a table whose
//! invariants hold and that survives a commit and reopen.
//!
//! An input whose first byte is odd is not a file but edits to a valid
//! one: a committed table that grew and shrank (so its page table keeps
//! unused ids), then had three commits go to its journal, its bytes xored
//! at the offsets the input names (three bytes an edit: two for the offset,
//! one to xor), then its checksums made right again (pages, metadata,
//! header, journal blocks), so that the reader's checks past the checksums
//! are what is tried. Other inputs are opened as they are.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use seekless_exhash::ExHash;

const SLOT: usize = 8192;

fuzz_target!(|data: &[u8]| {
    let image = match data.split_first() {
        Some((&mode, edits)) if mode & 1 == 1 => edited(edits),
        _ => data.to_vec(),
    };
    let Ok(mut table) = ExHash::open_on(image) else {
        return;
    };
    table.check_invariants().unwrap();
    let pairs: Vec<(u64, u64)> = table.iter().collect();
    assert_eq!(pairs.len() as u64, table.len());
    for &(k, v) in &pairs {
        assert_eq!(table.get(k), Some(v));
    }
    table.insert(12345, 678);
    table.commit().unwrap();
    let image = ExHash::into_store(table).into_device();
    let reopened = ExHash::open_on(image).unwrap();
    assert_eq!(reopened.get(12345), Some(678));
    assert!(reopened.len() >= pairs.len() as u64);
});

/// The valid file with `edits` applied, checksums made right.
fn edited(edits: &[u8]) -> Vec<u8> {
    static VALID: OnceLock<Vec<u8>> = OnceLock::new();
    let mut image = VALID
        .get_or_init(|| {
            let mut table = ExHash::create_on(Vec::new()).unwrap();
            for k in 0..6_000u64 {
                table.insert(k.wrapping_mul(0x9E37_79B9_7F4A_7C15), k);
            }
            for k in 500..6_000u64 {
                table.remove(k.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            }
            table.commit().unwrap();
            for round in 0..3u64 {
                for k in 0..100u64 {
                    table.insert(k << 40 | round, k);
                }
                for k in 100 * round..100 * round + 50 {
                    table.remove(k.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                }
                table.commit().unwrap();
            }
            ExHash::into_store(table).into_device()
        })
        .clone();
    for edit in edits.chunks_exact(3) {
        let at = u16::from_le_bytes([edit[0], edit[1]]) as usize * image.len() >> 16;
        image[at] ^= edit[2];
    }
    reseal(&mut image);
    image
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Make the checksums of the newer header copy, of the metadata it points
/// to and of every page the metadata's page table names right, as far as
/// they lie inside the image (edits may have moved them anywhere).
fn reseal(image: &mut [u8]) {
    let seq = |copy: usize| u64_at(image, copy + 16).unwrap_or(0);
    let copy = if seq(0) >= seq(4096) { 0 } else { 4096 };
    let (Some(meta_slot), Some(meta_len)) = (u64_at(image, copy + 24), u64_at(image, copy + 32))
    else {
        return;
    };
    let meta_at = (meta_slot as usize).saturating_mul(SLOT);
    let meta_end = meta_at.saturating_add(meta_len as usize);
    if meta_end <= image.len() && meta_len >= 24 {
        let ids = u32::from_le_bytes(image[meta_at + 16..meta_at + 20].try_into().unwrap());
        for id in 0..ids as usize {
            let record = meta_at + 24 + 16 * id;
            if record + 16 > meta_end {
                break;
            }
            let slot = u64_at(image, record).unwrap_or(0) as usize;
            let page = slot.saturating_mul(SLOT);
            if slot != 0 && page.saturating_add(SLOT) <= image.len() {
                let crc = crc32c::crc32c(&image[page..page + SLOT]);
                image[record + 12..record + 16].copy_from_slice(&crc.to_le_bytes());
            }
        }
        let crc = crc32c::crc32c(&image[meta_at..meta_end]);
        image[copy + 40..copy + 44].copy_from_slice(&crc.to_le_bytes());
    }
    reseal_journal(image, copy);
    let crc = crc32c::crc32c(&image[copy..copy + 60]);
    image[copy + 60..copy + 64].copy_from_slice(&crc.to_le_bytes());
}

/// Make the checksum of every block in the journal's extent that the header
/// copy at `copy` names right, as far as the blocks lie inside the image.
fn reseal_journal(image: &mut [u8], copy: usize) {
    let (Some(first), Some(slots)) = (u64_at(image, copy + 44), u64_at(image, copy + 52)) else {
        return;
    };
    let start = (first as usize).saturating_mul(SLOT);
    let end = start
        .saturating_add((slots as u32 as usize).saturating_mul(SLOT))
        .min(image.len());
    let (mut at, mut last_crc) = (start, 0);
    while at.saturating_add(40) <= end && &image[at..at + 8] == b"SLEXJRNL" {
        let len = u32::from_le_bytes(image[at + 32..at + 36].try_into().unwrap()) as usize;
        let Some(records) = image.get(at + 40..(at + 40).saturating_add(len).min(end)) else {
            return;
        };
        // Each block's checksum goes on from the one before it.
        let head = crc32c::crc32c_append(last_crc, &image[at..at + 36]);
        last_crc = crc32c::crc32c_append(head, records);
        image[at + 36..at + 40].copy_from_slice(&last_crc.to_le_bytes());
        at = at.saturating_add((40 + len).next_multiple_of(4096));
    }
}
