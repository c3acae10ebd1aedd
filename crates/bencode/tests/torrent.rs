//! Torrent metainfo, verification and creation. Expected info-hashes, names
//! and piece counts come from libtorrent 2.0.8 (`torrent_info` in the Debian
//! python3-libtorrent package).

use std::path::{Path, PathBuf};

use seekless_bencode::torrent::{
    CreateOptions, ErrorKind, Torrent, Version, create, hex, magnet_link, summary_json, verify,
};
use seekless_bencode::{Encoder, decode};
use seekless_testkit::{Rng, TempDir};

fn load(name: &str) -> Torrent {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    Torrent::from_bytes(&std::fs::read(path).unwrap()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn sample_torrents_match_libtorrent() {
    #[allow(clippy::type_complexity)]
    let expected: &[(&str, Version, Option<&str>, Option<&str>, &str, u64)] = &[
        (
            "base-v1.torrent",
            Version::V1,
            Some("96fafa36f44d9744f3d3ef7312a4196ba4c2a434"),
            None,
            "torture",
            1048576,
        ),
        (
            "base-v2.torrent",
            Version::V2,
            None,
            Some("e457ad5655f75fc7cdf3ffcb9ff356e458cf63d8f4b3ef965871610f125aa0a5"),
            "torture",
            1048576,
        ),
        (
            "many-pad-files.torrent",
            Version::Hybrid,
            Some("7fb133f463e83939dc952e6895178efb518e406e"),
            Some("bf605c9baf7ef08a8f1565d04d2230faee9bb0f46207f1870ea3731dca99e5d3"),
            "torture",
            1048576,
        ),
        (
            "sample.torrent",
            Version::V1,
            Some("58d8d15a4eb3bd9afabc9cee2564f78192777edb"),
            None,
            "sample",
            16384,
        ),
        (
            "v2_hybrid.torrent",
            Version::Hybrid,
            Some("514c76c1f27ec61ca8b37851bcd1cbf0b26cf120"),
            Some("518fbaf39b37020c896e8768a967da6d76bbd5ef7a02c761021b65a72c6cfa11"),
            "bittorrent-v1-v2-hybrid-test",
            524288,
        ),
        (
            "v2_multiple_files.torrent",
            Version::V2,
            None,
            Some("33549c6b0b7f0ce30f0cdc253ee05ccea3c67caa1560fa3c9bcc40c1837b5576"),
            "test",
            1048576,
        ),
    ];
    for (file, version, v1, v2, name, piece_length) in expected {
        let t = load(file);
        assert_eq!(t.version, *version, "{file}");
        assert_eq!(t.info_hash_v1.map(|h| hex(&h)).as_deref(), *v1, "{file}");
        assert_eq!(t.info_hash_v2.map(|h| hex(&h)).as_deref(), *v2, "{file}");
        assert_eq!(t.name, *name, "{file}");
        assert_eq!(t.piece_length, *piece_length, "{file}");
        let json = summary_json(&t);
        assert!(json.starts_with("{\"name\":"), "{json}");
    }
    let sample = load("sample.torrent");
    assert_eq!(sample.pieces.len(), 2);
    let paths: Vec<String> = sample.files.iter().map(|f| f.display_path()).collect();
    assert_eq!(
        paths,
        [
            "sample/text_file2.txt",
            "sample/.____padding_file/0",
            "sample/text_file.txt"
        ]
    );
    assert!(sample.files[1].pad);
    assert_eq!(load("base-v1.torrent").pieces.len(), 7);
    let hybrid = load("v2_hybrid.torrent");
    assert_eq!(hybrid.pieces.len(), 1715);
    assert_eq!(
        hybrid.files[0].display_path(),
        "bittorrent-v1-v2-hybrid-test/Darkroom (Stellar, 1994, Amiga ECS) HQ.mp4"
    );
    let magnet = magnet_link(&hybrid);
    assert!(magnet.starts_with(
        "magnet:?xt=urn:btih:514c76c1f27ec61ca8b37851bcd1cbf0b26cf120&xt=urn:btmh:1220518fbaf39b37020c896e8768a967da6d76bbd5ef7a02c761021b65a72c6cfa11&dn=bittorrent-v1-v2-hybrid-test"
    ), "{magnet}");
}

/// A single-file v1 torrent with the given info-dictionary entries.
fn v1_torrent(piece_length: i64, pieces: &[u8], name: &str, length: i64) -> Vec<u8> {
    let mut e = Encoder::new();
    e.dict().key("info").dict();
    e.key("length").int(length);
    e.key("name").str(name);
    e.key("piece length").int(piece_length);
    e.key("pieces").bytes(pieces);
    e.end().end();
    e.finish().unwrap()
}

fn reason(data: &[u8]) -> String {
    match Torrent::from_bytes(data) {
        Ok(_) => "ok".to_string(),
        Err(e) => match e.kind() {
            ErrorKind::Invalid { field, reason } => format!("{field}: {reason}"),
            _ => e.to_string(),
        },
    }
}

#[test]
fn invalid_metainfo_gets_clear_errors() {
    assert_eq!(reason(&v1_torrent(16384, &[0; 20], "a", 100)), "ok");
    assert_eq!(
        reason(&v1_torrent(16384, &[0; 30], "a", 100)),
        "info.pieces: length 30 is not a multiple of 20"
    );
    assert_eq!(
        reason(&v1_torrent(0, &[0; 20], "a", 100)),
        "info.piece length: must be positive"
    );
    assert_eq!(
        reason(&v1_torrent(16384, &[0; 40], "a", 100)),
        "info.pieces: 2 piece hashes for 100 bytes in pieces of 16384 (expected 1)"
    );
    assert_eq!(
        reason(&v1_torrent(16384, &[0; 20], "..", 100)),
        "info.name: bad path component \"..\""
    );
    assert_eq!(
        reason(&v1_torrent(16384, &[0; 20], "a", -1)),
        "info.length: negative size -1"
    );
    assert_eq!(
        reason(&v1_torrent(1 << 31, &[0; 20], "a", 100)),
        "info.piece length: 2147483648 is too large (at most 2^31 - 1)"
    );
    // A huge (but allowed) piece length over a small file: verifying needs
    // buffers for the data, not for the claimed piece size.
    let t = Torrent::from_bytes(&v1_torrent(1 << 30, &[0; 20], "a", 100)).unwrap();
    let report = verify(&t, Path::new("/nonexistent-data-dir"), &mut |_| {}).unwrap();
    assert_eq!(report.files[0].missing, 1);
    assert_eq!(reason(b"d4:infod4:name1:aee"), "info.piece length: missing");
    assert_eq!(reason(b"le"), "(top level): not a dictionary");
    assert_eq!(reason(b"d4:infoi1ee"), "info: not a dictionary");
    assert!(reason(b"d4:info").contains("unexpected end of input"));

    // Multi-file: a `..` component, and sizes overflowing u64.
    let multi = |files: &[(i64, &[&str])]| {
        let mut e = Encoder::new();
        e.dict().key("info").dict().key("files").list();
        for (length, path) in files {
            e.dict().key("length").int(*length).key("path").list();
            for c in *path {
                e.str(c);
            }
            e.end().end();
        }
        e.end();
        e.key("name").str("d").key("piece length").int(16384);
        e.key("pieces").bytes(&[0; 20]).end().end();
        e.finish().unwrap()
    };
    assert_eq!(reason(&multi(&[(10, &["a", "b"])])), "ok");
    assert_eq!(
        reason(&multi(&[(10, &["..", "etc"])])),
        "info.files[0].path: bad path component \"..\""
    );
    assert_eq!(
        reason(&multi(&[
            (i64::MAX, &["a"]),
            (i64::MAX, &["b"]),
            (i64::MAX, &["c"])
        ])),
        "info.files[2].length: total size overflows"
    );
    assert_eq!(
        reason(&multi(&[(10, &[])])),
        "info.files[0].path: empty path"
    );
}

#[test]
fn inconsistent_v2_layers_are_rejected() {
    let original = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/v2_multiple_files.torrent"),
    )
    .unwrap();
    // Flip one byte inside the piece layers (after the info dictionary).
    let doc = decode(&original).unwrap();
    let layers = doc.root().get(b"piece layers").unwrap();
    let (_, first) = layers.as_dict().unwrap().iter().next().unwrap();
    let at = first.offset() + first.raw().len() - 5;
    let mut corrupt = original.clone();
    corrupt[at] ^= 1;
    let r = reason(&corrupt);
    assert!(
        r.ends_with("inconsistent with the file's pieces root"),
        "{r}"
    );
    // Drop a byte's worth of layer: wrong length.
    let mut short = original[..first.offset()].to_vec();
    let payload = first.as_bytes().unwrap();
    short.extend_from_slice(format!("{}:", payload.len() - 32).as_bytes());
    short.extend_from_slice(&payload[32..]);
    short.extend_from_slice(&original[first.offset() + first.raw().len()..]);
    let r = reason(&short);
    assert!(r.contains("bytes for"), "{r}");
}

fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::xorshift64(seed.wrapping_mul(0x9e3779b97f4a7c15) | 1);
    (0..len).map(|_| rng.next_u64() as u8).collect()
}

fn make_tree(root: &Path) -> Vec<(PathBuf, usize)> {
    let files = [
        ("content/a.bin", 100_000),
        ("content/b/empty", 0),
        ("content/b/c.bin", 16_384),
        ("content/b/d.bin", 70_001),
        ("content/z.txt", 5),
    ];
    files
        .iter()
        .enumerate()
        .map(|(i, (p, len))| {
            let path = root.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, pseudo_random(*len, i as u64 + 1)).unwrap();
            (path, *len)
        })
        .collect()
}

#[test]
fn create_then_verify_every_version() {
    let tmp = TempDir::new("bencode-torrent-create");
    let files = make_tree(&tmp);
    for version in [Version::V1, Version::V2, Version::Hybrid] {
        let options = CreateOptions {
            version,
            piece_length: Some(32768),
            trackers: vec![
                "http://tracker.example/announce".into(),
                "udp://t2.example:80".into(),
            ],
            creation_date: Some(1_700_000_000),
            ..CreateOptions::default()
        };
        let bytes = create(&tmp.join("content"), &options, &mut |_| {}).unwrap();
        let t = Torrent::from_bytes(&bytes).unwrap();
        assert_eq!(t.version, version);
        assert_eq!(t.name, "content");
        assert_eq!(t.total_size, 186_390);
        assert_eq!(t.trackers.len(), 2);
        let paths: Vec<String> = t
            .files
            .iter()
            .filter(|f| !f.pad)
            .map(|f| f.display_path())
            .collect();
        assert_eq!(
            paths,
            [
                "content/a.bin",
                "content/b/c.bin",
                "content/b/d.bin",
                "content/b/empty",
                "content/z.txt"
            ]
        );

        let mut seen = 0u64;
        let report = verify(&t, &tmp, &mut |n| seen += n).unwrap();
        assert!(report.all_good(), "{version:?}: {report:?}");
        assert!(seen >= t.total_size);

        // Corrupt one byte of d.bin: its pieces (and v1 neighbours) go bad.
        let d = &files[3].0;
        let original = std::fs::read(d).unwrap();
        let mut changed = original.clone();
        changed[40_000] ^= 0xff;
        std::fs::write(d, &changed).unwrap();
        let report = verify(&t, &tmp, &mut |_| {}).unwrap();
        assert!(!report.all_good());
        let bad: Vec<&str> = report
            .files
            .iter()
            .filter(|f| f.bad > 0)
            .map(|f| f.path.as_str())
            .collect();
        assert!(bad.contains(&"content/b/d.bin"), "{version:?}: {report:?}");
        assert_eq!(
            report
                .files
                .iter()
                .find(|f| f.path == "content/a.bin")
                .unwrap()
                .bad,
            0
        );

        // Remove it: missing.
        std::fs::remove_file(d).unwrap();
        let report = verify(&t, &tmp, &mut |_| {}).unwrap();
        let entry = report
            .files
            .iter()
            .find(|f| f.path == "content/b/d.bin")
            .unwrap();
        assert!(
            entry.missing > 0 && entry.good == 0,
            "{version:?}: {entry:?}"
        );
        // Truncated: the tail is missing.
        std::fs::write(d, &original[..50_000]).unwrap();
        let report = verify(&t, &tmp, &mut |_| {}).unwrap();
        let entry = report
            .files
            .iter()
            .find(|f| f.path == "content/b/d.bin")
            .unwrap();
        assert!(entry.missing > 0, "{version:?}: {entry:?}");
        std::fs::write(d, &original).unwrap();
    }
}

#[test]
fn create_single_file_and_piece_length_checks() {
    let tmp = TempDir::new("bencode-torrent-single");
    let path = tmp.join("movie.bin");
    std::fs::write(&path, pseudo_random(200_000, 9)).unwrap();
    for version in [Version::V1, Version::V2, Version::Hybrid] {
        let options = CreateOptions {
            version,
            ..CreateOptions::default()
        };
        let bytes = create(&path, &options, &mut |_| {}).unwrap();
        let t = Torrent::from_bytes(&bytes).unwrap();
        assert_eq!(t.files.len(), 1);
        assert_eq!(t.files[0].path, ["movie.bin"]);
        assert_eq!(t.piece_length, 16384);
        assert!(verify(&t, &tmp, &mut |_| {}).unwrap().all_good());
    }
    let options = CreateOptions {
        piece_length: Some(10_000),
        ..CreateOptions::default()
    };
    assert!(create(&path, &options, &mut |_| {}).is_err());
    assert!(create(&tmp.join("absent"), &CreateOptions::default(), &mut |_| {}).is_err());
}
