use super::*;
use crate::format::hash::{Key, Kind};
use crate::format::layout::{CHUNK, CONTINUED, Layout, PAGE, PAGE_HEADER};

#[test]
fn whole_sha1_assembly_matches_the_general_one() {
    let mut state = 99u64;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state ^ state >> 31
    };
    for last in 8..=48 {
        for _ in 0..200 {
            let bucket = next().checked_shr(16 + last).unwrap_or(0);
            let chunks = [next() >> 8, next() >> 8, next() >> (64 - last)];
            let lens = [CHUNK, CHUNK, last];
            assert_eq!(
                sha1(bucket, chunks, last),
                assemble(Kind::Sha1, bucket, chunks, lens, &[]),
                "last chunk of {last} bits"
            );
        }
    }
}

fn key(i: u64) -> Key {
    // Spread keys over the space, deterministically.
    let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    Key {
        hi: x,
        mid: x.rotate_left(17) ^ i,
        lo: (x >> 7) as u32,
    }
}

#[test]
fn encode_decode_and_lookup_every_key() {
    for (kind, n) in [(Kind::Sha1, 3000u64), (Kind::Ntlm, 2000), (Kind::Sha1, 1)] {
        let layout = Layout::for_count(kind, n);
        let mut keys: Vec<Key> = (0..n)
            .map(|i| {
                let mut k = key(i);
                if kind == Kind::Ntlm {
                    k.lo = 0;
                }
                k
            })
            .collect();
        keys.sort();
        let counts = |i: usize| [1u64, 2, 3, 7, 1 << 40, u64::MAX, 1][i % 7];
        let mut enc = Encoder::new(layout);
        for (i, &k) in keys.iter().enumerate() {
            enc.push(k, counts(i));
        }
        enc.flush();
        let mut decoded = Vec::new();
        for (p, entry) in enc.dir.iter().enumerate() {
            let bytes = &page_bytes(&enc.pages)[p * PAGE..(p + 1) * PAGE];
            assert_eq!(crc32c::crc32c(bytes), entry.crc);
            let page = Page::new(bytes, layout).unwrap();
            page.decode(layout, entry.first & !CONTINUED, &mut decoded)
                .unwrap();
        }
        let expect: Vec<_> = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| (k, counts(i)))
            .collect();
        assert_eq!(decoded, expect);
        // Lookups, through the directory.
        for (i, &k) in keys.iter().enumerate() {
            let b = layout.bucket(k);
            let p = enc.dir.partition_point(|e| e.first & !CONTINUED <= b) - 1;
            let page =
                Page::new(&page_bytes(&enc.pages)[p * PAGE..(p + 1) * PAGE], layout).unwrap();
            assert_eq!(
                page.count(layout, b - (enc.dir[p].first & !CONTINUED), k),
                Some(counts(i))
            );
            let mut absent = k;
            absent.mid ^= 1;
            assert_eq!(
                page.count(layout, b - (enc.dir[p].first & !CONTINUED), absent),
                None
            );
        }
    }
}

/// Pages of `n` SHA-1 keys with counts of every length, and the pairs.
fn pages_of(n: u64) -> (Layout, Encoder, Vec<(Key, u64)>) {
    let layout = Layout::for_count(Kind::Sha1, n);
    let mut keys: Vec<Key> = (0..n).map(key).collect();
    keys.sort();
    let pairs: Vec<(Key, u64)> = keys
        .into_iter()
        .enumerate()
        .map(|(i, k)| (k, 1 + (i as u64 * 0x9E37_79B9) % (1 << (i % 50))))
        .collect();
    let mut enc = Encoder::new(layout);
    for &(k, c) in &pairs {
        enc.push(k, c);
    }
    enc.flush();
    (layout, enc, pairs)
}

#[test]
fn a_window_gives_exactly_the_pairs_of_its_buckets() {
    let (layout, enc, pairs) = pages_of(3000);
    let bytes = &page_bytes(&enc.pages)[..PAGE];
    let first = enc.dir[0].first & !CONTINUED;
    let page = Page::new(bytes, layout).unwrap();
    let mut all = Vec::new();
    page.decode(layout, first, &mut all).unwrap();
    assert_eq!(all, pairs[..all.len()]);
    let buckets: Vec<u64> = all.iter().map(|(k, _)| layout.bucket(*k)).collect();
    let (lo, hi) = (buckets[0], *buckets.last().unwrap());
    let middle = buckets[buckets.len() / 2];
    for window in [
        lo..=hi,
        lo..=lo,
        hi..=hi,
        lo + 3..=hi - 5,
        0..=middle,
        middle..=middle,
        middle + 1..=u64::MAX,
        hi + 1..=u64::MAX,
    ] {
        let mut got = Vec::new();
        page.decode_within(layout, first, window.clone(), &mut got)
            .unwrap();
        let want: Vec<_> = all
            .iter()
            .filter(|(k, _)| window.contains(&layout.bucket(*k)))
            .copied()
            .collect();
        assert_eq!(got, want, "window {window:?}");
    }
}

#[test]
fn a_page_read_in_place_ignores_what_follows_it() {
    let (layout, enc, _) = pages_of(3000);
    let pages = enc.pages.len();
    for p in [0, pages - 1] {
        let bytes = &page_bytes(&enc.pages)[p * PAGE..(p + 1) * PAGE];
        let first = enc.dir[p].first & !CONTINUED;
        let mut copied = Vec::new();
        Page::new(bytes, layout)
            .unwrap()
            .decode(layout, first, &mut copied)
            .unwrap();
        // Ones after the page: its last bits read in place are masked.
        for filler in [0x00, 0xFF, 0xA5] {
            let mut followed = bytes.to_vec();
            followed.resize(PAGE + crate::format::bits::BYTES, filler);
            let page = Page::with_what_follows(&followed, layout).unwrap();
            let mut in_place = Vec::new();
            page.decode(layout, first, &mut in_place).unwrap();
            assert_eq!(in_place, copied, "page {p}, filler {filler:#x}");
            let mut window = Vec::new();
            let lo = layout.bucket(copied[copied.len() / 2].0);
            page.decode_within(layout, first, lo..=u64::MAX, &mut window)
                .unwrap();
            let want: Vec<_> = copied
                .iter()
                .filter(|(k, _)| layout.bucket(*k) >= lo)
                .copied()
                .collect();
            assert_eq!(window, want, "page {p}");
        }
    }
}

#[test]
fn damaged_pages_decode_to_none_or_to_pairs_never_a_panic() {
    let (layout, enc, pairs) = pages_of(3000);
    let first = enc.dir[0].first & !CONTINUED;
    let good = &page_bytes(&enc.pages)[..PAGE];
    let page = Page::new(good, layout).unwrap();
    // The sections' ends: a count length's or a bucket's last one
    // cleared leaves a section a hash short.
    for end in [page.upper, page.low] {
        let mut bad = good.to_vec();
        let at = PAGE_HEADER * 8 + end - 1;
        bad[at / 8] &= !(1 << (at % 8));
        let page = Page::new(&bad, layout).unwrap();
        assert_eq!(page.decode(layout, first, &mut Vec::new()), None);
    }
    // The last bucket past 2^64: refused, not wrapped.
    assert_eq!(page.decode(layout, u64::MAX - 1, &mut Vec::new()), None);
    // Any bit flipped: a page that decodes has no more hashes than its
    // header says, and what fails leaves the output as it was.
    let mut rng = seekless_testkit::Rng::xorshift64((17) | 1);
    let mut next = || rng.next_u64();
    for _ in 0..3000 {
        let at = next() as usize % (PAGE * 8);
        let mut bad = good.to_vec();
        bad[at / 8] ^= 1 << (at % 8);
        let Some(page) = Page::new(&bad, layout) else {
            continue;
        };
        let mut out = vec![pairs[0]];
        match page.decode(layout, first, &mut out) {
            Some(()) => assert!(out.len() - 1 <= page.keys),
            None => assert_eq!(out, [pairs[0]]),
        }
    }
}

#[test]
fn one_bucket_larger_than_a_page_is_continued() {
    let layout = Layout::whole(Kind::Sha1, 20);
    let mut enc = Encoder::new(layout);
    let keys: Vec<Key> = (0..1000u64)
        .map(|i| Key {
            hi: 0x1234_5000_0000_0000 | i,
            mid: i,
            lo: 0,
        })
        .collect();
    for &k in &keys {
        enc.push(k, 1);
    }
    enc.flush();
    assert!(enc.dir.len() >= 4);
    assert!(enc.dir[1..].iter().all(|e| e.first & CONTINUED != 0));
    let mut decoded = Vec::new();
    for (p, entry) in enc.dir.iter().enumerate() {
        let page = Page::new(&page_bytes(&enc.pages)[p * PAGE..(p + 1) * PAGE], layout).unwrap();
        page.decode(layout, entry.first & !CONTINUED, &mut decoded)
            .unwrap();
    }
    assert_eq!(decoded.len(), 1000);
}
