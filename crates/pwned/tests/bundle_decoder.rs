//! The bundle push decoder: any chunking of a bundle's bytes, and any
//! cut of its gzip stream into members, gives what the whole file at once
//! gives (items, or the same error); damaged and hostile content is
//! refused with the reader's messages, sizes checked before anything is
//! kept.
#![cfg(feature = "update")]

use std::io::{Cursor, Read, Write};
use std::sync::OnceLock;

use proptest::prelude::*;
use seekless_pwned::test_util::{
    BundleDecoder, BundleItem, BundleReader, MAX_RANGE_BODY, SortedWriter,
};
use seekless_pwned::{Index, Key, Kind, RANGES, Source, diff};
use seekless_testkit::Rng;

/// An index in memory of `n` random hashes from `seed`, with a validator
/// on every range it fills when `validators` is given.
fn index(n: usize, seed: u64, validators: Option<&str>) -> Index {
    let hashes = seekless_testkit::hashes(&mut Rng::splitmix64(seed), n, 20, 1000);
    let mut keys: Vec<(Key, u64)> = hashes
        .into_iter()
        .map(|(hash, count)| (Key::from_bytes(&hash), count))
        .collect();
    keys.sort();
    keys.dedup_by_key(|(k, _)| *k);
    let mut writer = SortedWriter::new(Cursor::new(Vec::new()), Kind::Sha1, None).unwrap();
    for &(key, count) in &keys {
        writer.push(key, count).unwrap();
    }
    let source = validators.map(|tag| {
        let mut source = Source::new("http://127.0.0.1:1", 7);
        let filled: std::collections::BTreeSet<u32> =
            keys.iter().map(|(k, _)| k.prefix()).collect();
        for p in 0..RANGES {
            let v = format!("\"{tag}-{p:05x}\"");
            source.push_validator(filled.contains(&p).then_some(v.as_bytes()));
        }
        source
    });
    let bytes = writer.finish(source.as_ref()).unwrap().0.into_inner();
    Index::from_bytes(bytes).unwrap()
}

/// A bundle of a few thousand entries (lines, validators, ranges
/// emptied), made once.
fn bundle() -> &'static [u8] {
    static BUNDLE: OnceLock<Vec<u8>> = OnceLock::new();
    BUNDLE.get_or_init(|| {
        let (old, new) = (index(3_000, 1, Some("old")), index(3_000, 2, Some("new")));
        let mut out = Vec::new();
        diff(Some(&old), &new, &mut out).unwrap();
        out
    })
}

/// The bundle's content (its gzip members inflated).
fn content() -> Vec<u8> {
    let mut content = Vec::new();
    flate2::read::MultiGzDecoder::new(bundle())
        .read_to_end(&mut content)
        .unwrap();
    content
}

/// `content` gzipped in members that end at `cuts` (offsets, any order).
fn members(content: &[u8], cuts: &[usize]) -> Vec<u8> {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(content.len())).collect();
    cuts.push(0);
    cuts.push(content.len());
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    for pair in cuts.windows(2) {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&content[pair[0]..pair[1]]).unwrap();
        out.extend_from_slice(&gz.finish().unwrap());
    }
    out
}

/// What decoding `bytes` pushed in pieces ending at `cuts` gives: the
/// items, then whether the bundle ended whole (else the message).
fn decode(bytes: &[u8], cuts: &[usize]) -> (Vec<BundleItem>, Result<(), String>) {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(bytes.len())).collect();
    cuts.push(bytes.len());
    cuts.sort_unstable();
    let mut decoder = BundleDecoder::new();
    let mut items = Vec::new();
    let mut from = 0;
    for to in cuts {
        let mut piece = &bytes[from..to];
        from = to;
        loop {
            match decoder.decode(piece) {
                Ok((used, item)) => {
                    piece = &piece[used..];
                    match item {
                        Some(item) => items.push(item),
                        None => {
                            assert!(piece.is_empty(), "None takes every byte");
                            break;
                        }
                    }
                }
                Err(e) => return (items, Err(e.to_string())),
            }
        }
    }
    let end = decoder.finish().map_err(|e| e.to_string());
    (items, end)
}

#[test]
fn a_whole_bundle_decodes_to_its_header_entries_and_end() {
    let (items, end) = decode(bundle(), &[]);
    end.unwrap();
    let BundleItem::Header(header) = &items[0] else {
        panic!("the header first: {:?}", items[0]);
    };
    assert_eq!(items.last(), Some(&BundleItem::End));
    let entries = &items[1..items.len() - 1];
    assert!(entries.len() > 2_000, "{}", entries.len());
    // The reader gives the same, from a file of any read size.
    let mut reader = BundleReader::new(Cursor::new(bundle())).unwrap();
    assert_eq!(reader.header(), header);
    for item in entries {
        let BundleItem::Entry(entry) = item else {
            panic!("{item:?}")
        };
        assert_eq!(reader.next_entry().unwrap().as_ref(), Some(entry));
    }
    assert_eq!(reader.next_entry().unwrap(), None);
    reader.finish().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Any chunking of the file, and any cut of the content into gzip
    /// members, gives the same items as the file at once.
    #[test]
    fn any_chunking_and_any_members_decode_the_same(
        cuts in proptest::collection::vec(0usize..400_000, 0..40),
        small in proptest::collection::vec(0usize..200, 0..40),
        member_cuts in proptest::collection::vec(0usize..400_000, 0..8),
    ) {
        let whole = decode(bundle(), &[]);
        prop_assert!(whole.1.is_ok());
        // Pieces of any size, some of a byte or a few.
        let mut all = cuts.clone();
        all.extend(small.iter().copied());
        prop_assert_eq!(&decode(bundle(), &all), &whole);
        let regzipped = members(&content(), &member_cuts);
        prop_assert_eq!(&decode(&regzipped, &[]), &whole);
        prop_assert_eq!(&decode(&regzipped, &all), &whole);
    }

    /// A cut or a damaged byte anywhere: refused, with the same items
    /// before and the same message in any chunking.
    #[test]
    fn damage_is_found_the_same_in_any_chunking(
        at in 0usize..1_000_000,
        xor in 1u8..=255,
        cuts in proptest::collection::vec(0usize..400_000, 0..24),
    ) {
        let good = bundle();
        let at = at % good.len();
        let cut = decode(&good[..at], &[]);
        prop_assert!(cut.1.is_err());
        prop_assert_eq!(&decode(&good[..at], &cuts), &cut);
        let mut damaged = good.to_vec();
        damaged[at] ^= xor;
        let once = decode(&damaged, &[]);
        // (The gzip header's time, flags for text, XFL and OS carry
        // nothing the bundle needs: unchecked, as by gzip itself.)
        prop_assert!(once.1.is_err() || (3..10).contains(&at), "byte {} changed unnoticed", at);
        prop_assert_eq!(&decode(&damaged, &cuts), &once);
        // The same damage in the content, gzipped afresh: the checksum, or
        // a check of the part it lands in.
        let mut content = content();
        let at = at % content.len();
        content[at] ^= xor;
        let regzipped = members(&content, &[at]);
        let once = decode(&regzipped, &[]);
        prop_assert!(once.1.is_err(), "content byte {} changed unnoticed", at);
        prop_assert_eq!(&decode(&regzipped, &cuts), &once);
    }
}

/// The content of a bundle with `entries` of SHA-1 and the parts after
/// the header given raw (no end, no checksum unless in `rest`).
fn header_then(entries: u32, rest: &[u8]) -> Vec<u8> {
    let mut c = b"SEEKBNDL".to_vec();
    c.extend_from_slice(&1u16.to_le_bytes());
    c.extend_from_slice(&[1, 0]);
    c.extend_from_slice(&[0xaa; 64]);
    c.extend_from_slice(&[0; 32]);
    c.extend_from_slice(&0u16.to_le_bytes());
    c.extend_from_slice(&entries.to_le_bytes());
    c.extend_from_slice(rest);
    c
}

fn refused(content: &[u8]) -> String {
    let (_, end) = decode(&members(content, &[]), &[]);
    end.expect_err("refused")
}

#[test]
fn hostile_sizes_are_refused_before_anything_is_kept() {
    // More lines than a range holds: refused from the length alone.
    let mut entry = 5u32.to_le_bytes().to_vec();
    entry.push(1);
    entry.extend_from_slice(&(MAX_RANGE_BODY as u32 + 1).to_le_bytes());
    let e = refused(&header_then(1, &entry));
    assert!(e.contains("more than a range holds"), "{e}");
    // More entries than ranges.
    let e = refused(&header_then(RANGES + 1, &[]));
    assert!(e.contains("at most one a range"), "{e}");
    // Entries out of order, an empty validator, unknown flags.
    let mut two = Vec::new();
    for p in [9u32, 9] {
        two.extend_from_slice(&p.to_le_bytes());
        two.push(0);
    }
    let e = refused(&header_then(2, &two));
    assert!(e.contains("out of order"), "{e}");
    let mut empty_validator = 3u32.to_le_bytes().to_vec();
    empty_validator.extend_from_slice(&[2, 0]);
    let e = refused(&header_then(1, &empty_validator));
    assert!(e.contains("an empty validator"), "{e}");
    let mut flags = 3u32.to_le_bytes().to_vec();
    flags.push(4);
    let e = refused(&header_then(1, &flags));
    assert!(e.contains("unknown flags"), "{e}");
    // Cut in a range's lines: says where.
    let mut short = 3u32.to_le_bytes().to_vec();
    short.push(1);
    short.extend_from_slice(&100u32.to_le_bytes());
    short.extend_from_slice(b"0005AD76BD555C1D6D771DE417A4B87E4B4:10");
    let e = refused(&header_then(1, &short));
    assert!(e.contains("truncated: it ends in a range's lines"), "{e}");
    // A newer version; not a bundle; nothing at all.
    let mut newer = header_then(0, &[]);
    newer[8] = 2;
    assert!(refused(&newer).contains("made by a newer seekless"));
    assert!(refused(b"SEEKPWND").contains("bad magic"));
    let (_, end) = decode(b"", &[]);
    assert!(end.unwrap_err().contains("truncated: it ends in the magic"));
    // Not gzip at all.
    let (_, end) = decode(b"SEEKBNDL", &[]);
    assert!(end.unwrap_err().contains("damaged gzip in the magic"));
}

#[test]
fn nothing_may_follow_the_end() {
    let good = bundle();
    let empty_member = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast())
        .finish()
        .unwrap();
    for tail in [&b"x"[..], &[0x1f, 0x8b], &empty_member] {
        let mut longer = good.to_vec();
        longer.extend_from_slice(tail);
        let (items, end) = decode(&longer, &[good.len()]);
        assert_eq!(items.last(), Some(&BundleItem::End));
        assert_eq!(
            end.unwrap_err(),
            "bundle refused: data after the end of the bundle"
        );
    }
    // Content after the checksum, in the same member.
    let mut content = content();
    content.push(0);
    let (_, end) = decode(&members(&content, &[]), &[]);
    assert_eq!(
        end.unwrap_err(),
        "bundle refused: data after the end of the bundle"
    );
    // The reader says so too; after an error the decoder repeats it.
    let mut longer = good.to_vec();
    longer.push(0);
    let mut reader = BundleReader::new(Cursor::new(&longer)).unwrap();
    while reader.next_entry().unwrap().is_some() {}
    let e = reader.finish().unwrap_err();
    assert!(e.to_string().contains("data after the end"), "{e}");
    let mut decoder = BundleDecoder::new();
    assert!(decoder.decode(b"not gzip").is_err());
    assert!(decoder.decode(bundle()).is_err());
    assert!(decoder.finish().is_err());
}
