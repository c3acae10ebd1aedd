use super::*;
use crate::format::hash::Key;
use crate::range::gzip::gunzip_whole;
use crate::range::parse::MAX_RANGE_BODY;
use crate::update::suspect::Diff;

fn key(n: u64) -> Key {
    Key {
        hi: n,
        mid: 0,
        lo: 0,
    }
}

#[test]
fn diffs_count_added_removed_and_changed() {
    let old = [(key(1), 5), (key(2), 1), (key(4), 7)];
    let new = [(key(2), 1), (key(3), 1), (key(4), 8), (key(5), 2)];
    assert_eq!(
        Diff::of(&old, &new, 1),
        Diff {
            added: 2,
            removed: 1,
            counts_changed: 1,
            vanished: 1,
            lowered: 0,
        }
    );
    assert_eq!(Diff::of(&old, &old, 1), Diff::default());
    assert_eq!(Diff::of(&[], &new, 1).added, 4);
    let emptied = Diff::of(&old, &[], 1);
    assert_eq!((emptied.removed, emptied.vanished), (3, 3));
}

#[test]
fn diffs_tell_a_lowered_count_and_a_vanished_hash_from_a_minimum() {
    let old = [(key(1), 5), (key(2), 3), (key(4), 7)];
    // One count lowered, nothing else.
    let lowered = Diff::of(&old, &[(key(1), 5), (key(2), 2), (key(4), 7)], 1);
    assert_eq!(
        (lowered.lowered, lowered.vanished, lowered.counts_changed),
        (1, 0, 1)
    );
    // One hash dropped from the middle.
    let dropped = Diff::of(&old, &[(key(1), 5), (key(4), 7)], 1);
    assert_eq!(
        (dropped.vanished, dropped.removed, dropped.lowered),
        (1, 1, 0)
    );
    // A minimum of 4 leaves key 2 out of the new index: removed, but the
    // answer holds it (not vanished), and key 3 (count 1) is not added.
    let subset = Diff::of(
        &old,
        &[(key(1), 5), (key(2), 3), (key(3), 1), (key(4), 7)],
        4,
    );
    assert_eq!(
        subset,
        Diff {
            removed: 1,
            ..Diff::default()
        }
    );
}

#[test]
fn bodies_decode_within_the_limit() {
    use std::io::Write;
    let text = b"1E4C9B93F3F0682250B6CF8331B7EE68FD8:1".repeat(10);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&text).unwrap();
    let gz = gz.finish().unwrap();
    assert_eq!(decode_body(Some(b"gzip"), &gz).unwrap(), text);
    assert_eq!(decode_body(None, &text).unwrap(), text);
    assert!(
        decode_body(Some(b"gzip"), &gz[..gz.len() - 9]).is_err(),
        "truncated"
    );
    assert!(decode_body(Some(b"zstd"), &gz).is_err());
    // Two members, as concatenated files are: the streaming decoder.
    let two = [gz.clone(), gz.clone()].concat();
    assert!(gunzip_whole(&two, MAX_RANGE_BODY).is_none());
    assert_eq!(decode_body(Some(b"gzip"), &two).unwrap(), text.repeat(2));
    // A trailer that states a wrong size; garbage after the member.
    let mut lying = gz.clone();
    let n = lying.len();
    lying[n - 4] ^= 1;
    assert!(gunzip_whole(&lying, MAX_RANGE_BODY).is_none());
    assert!(decode_body(Some(b"gzip"), &lying).is_err());
    let trailing = [&gz[..], b"junk"].concat();
    assert!(decode_body(Some(b"gzip"), &trailing).is_err());
    // A small body that inflates past the limit.
    let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    bomb.write_all(&vec![b'0'; MAX_RANGE_BODY + 10]).unwrap();
    let bomb = bomb.finish().unwrap();
    assert!(bomb.len() < 100_000);
    assert!(decode_body(Some(b"gzip"), &bomb).is_err());
}

#[test]
fn the_minimum_count_is_kept_raised_or_lowered_only_with_full() {
    use crate::error::ErrorKind;
    use crate::update::run::min_count;
    let asking = |min_count: Option<u64>, full: bool| UpdateOptions {
        min_count,
        full,
        ..UpdateOptions::default()
    };
    // Not given: the index's (1 for a new one); 0 counts as 1.
    assert_eq!(min_count(2500, &asking(None, false)).unwrap(), 2500);
    assert_eq!(min_count(1, &asking(None, false)).unwrap(), 1);
    assert_eq!(min_count(1, &asking(Some(0), false)).unwrap(), 1);
    // Raised: the copied ranges are filtered.
    assert_eq!(min_count(2500, &asking(Some(4000), false)).unwrap(), 4000);
    // Lowered: only a full download has what the index left out.
    let e = min_count(4000, &asking(Some(100), false)).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::MinCount {
                index: 4000,
                asked: 100,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("--full"), "{e}");
    assert_eq!(min_count(4000, &asking(Some(100), true)).unwrap(), 100);
    // A bundle, made or applied, joins indexes of one minimum.
    let mut o = asking(Some(5000), false);
    o.bundle_out = Some("changes.bundle".into());
    assert!(min_count(4000, &o).is_err());
    o.min_count = Some(4000);
    assert_eq!(min_count(4000, &o).unwrap(), 4000);
    let mut o = asking(Some(5000), false);
    o.from_bundle = Some("changes.bundle".into());
    assert!(min_count(4000, &o).is_err());
}
