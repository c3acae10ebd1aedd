use super::pad::*;
use super::parse::*;
use super::render::*;
use super::validator::*;
use super::*;
use crate::error::{ErrorKind, Result};
use crate::format::hash::{Key, Kind, prefix_ascii};
use crate::format::source::RANGES;

#[test]
fn padding_is_sorted_disjoint_and_sized() {
    for kind in [Kind::Sha1, Kind::Ntlm] {
        let prefix = 0x5BAA6u32;
        let real: Vec<(Key, u64)> = (0..1000u64)
            .map(|i| {
                let key = Key {
                    hi: u64::from(prefix) << 44 | i << 20,
                    mid: i,
                    lo: 0,
                };
                (key, i + 1)
            })
            .collect();
        for n in [0, 1, 799, 800, 1000] {
            for seed in 0..20 {
                let padded = pad_range(&real[..n], kind, prefix, seed);
                assert!(padded.len() >= n.max(PAD_MIN));
                assert!(padded.len() <= n.max(PAD_MIN) + PAD_SPREAD);
                assert!(padded.windows(2).all(|w| w[0].0 < w[1].0));
                assert!(padded.iter().all(|(k, _)| k.hi >> 44 == u64::from(prefix)));
                let zeros: Vec<_> = padded.iter().filter(|(_, c)| *c == 0).collect();
                assert_eq!(zeros.len(), padded.len() - n);
                if kind == Kind::Ntlm {
                    assert!(padded.iter().all(|(k, _)| k.lo == 0));
                }
                // What the body says parses back to the real pairs.
                let mut back = Vec::new();
                parse_range(kind, prefix, &range_body(kind, &padded), &mut back).unwrap();
                assert_eq!(back, real[..n]);
            }
        }
    }
}

#[test]
fn hex_of_every_nibble() {
    let mut state = 7u64;
    let special = [
        0,
        u64::MAX,
        0x0123_4567_89AB_CDEF,
        0xFEDC_BA98_7654_3210,
        0x9A0F_F0A9_0909_AAAA,
    ];
    for x in special
        .into_iter()
        .chain((0..10_000).map(|_| splitmix(&mut state)))
    {
        let [a, b] = hex16(x);
        let mut got = a.to_le_bytes().to_vec();
        got.extend_from_slice(&b.to_le_bytes());
        assert_eq!(got, format!("{x:016X}").as_bytes(), "{x:x}");
        assert_eq!(
            hex8(x as u32).to_le_bytes(),
            format!("{:08X}", x as u32).as_bytes()
        );
    }
}

#[test]
fn eight_digits_at_once() {
    let mut state = 3u64;
    let powers = (0..8).flat_map(|e| {
        let p = 10u32.pow(e);
        [p - 1, p, p + 1]
    });
    for n in powers
        .chain([0, 99_999_999, 10_000, 9_999, 12_345_678, 10_000_001])
        .chain((0..110_000).map(|i| {
            // Mostly any below 10^8, every eleventh a small one.
            let modulus = if i % 11 == 0 { 1_000 } else { 100_000_000 };
            (splitmix(&mut state) % modulus) as u32
        }))
    {
        let (word, len) = decimal8(n);
        let text = n.to_string();
        assert_eq!(len, text.len(), "{n}");
        assert_eq!(&word.to_le_bytes()[..len], text.as_bytes(), "{n}");
    }
}

#[test]
fn decimal_lengths() {
    let mut state = 5u64;
    for n in (0..20)
        .flat_map(|e| {
            let p = 10u64.pow(e);
            [p - 1, p, p + 1]
        })
        .chain([u64::MAX, 0])
        .chain((0..10_000).map(|_| splitmix(&mut state) >> (state % 64)))
    {
        assert_eq!(decimal_len(n), n.to_string().len(), "{n}");
    }
}

#[test]
fn bodies_match_a_plain_rendering() {
    let mut state = 11u64;
    for kind in [Kind::Sha1, Kind::Ntlm] {
        for n in [1, 2, 3, 100] {
            let items: Vec<(Key, u64)> = (0..n)
                .map(|i| {
                    let key = Key {
                        hi: splitmix(&mut state),
                        mid: splitmix(&mut state),
                        lo: if kind == Kind::Sha1 {
                            splitmix(&mut state) as u32
                        } else {
                            0
                        },
                    };
                    let count = match i % 5 {
                        0 => u64::MAX,
                        1 => 1,
                        2 => 10u64.pow((splitmix(&mut state) % 20) as u32),
                        3 => splitmix(&mut state) >> (splitmix(&mut state) % 64),
                        _ => 9,
                    };
                    (key, count)
                })
                .collect();
            let want: Vec<String> = items
                .iter()
                .map(|(k, c)| {
                    let hex: String = k.to_bytes().iter().map(|b| format!("{b:02X}")).collect();
                    format!("{}:{c}", &hex[5..kind.hex_len()])
                })
                .collect();
            let mut out = b"before".to_vec();
            write_range_body(kind, &items, &mut out);
            assert_eq!(out, format!("before{}", want.join("\r\n")).as_bytes());
        }
    }
}

#[test]
fn digits_in_registers_and_in_words_agree() {
    use std::mem::MaybeUninit;
    let mut state = 13u64;
    let keys = [
        Key {
            hi: 0,
            mid: 0,
            lo: 0,
        },
        Key {
            hi: u64::MAX,
            mid: u64::MAX,
            lo: u32::MAX,
        },
    ]
    .into_iter()
    .chain((0..5000).map(|_| Key {
        hi: splitmix(&mut state),
        mid: splitmix(&mut state),
        lo: splitmix(&mut state) as u32,
    }));
    let bytes = |out: &[MaybeUninit<u8>]| -> Vec<u8> {
        // SAFETY: both writers write all 40 bytes.
        out.iter().map(|b| unsafe { b.assume_init() }).collect()
    };
    for key in keys {
        let (mut a, mut b) = ([MaybeUninit::new(0); 40], [MaybeUninit::new(0); 40]);
        put_digits::<PREFIX_DIGITS>(key, &mut a);
        put_digits_in_words::<PREFIX_DIGITS>(key, &mut b);
        let hex: String = key.to_bytes().iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(bytes(&a)[..35], hex.as_bytes()[5..]);
        assert_eq!(bytes(&a)[..35], bytes(&b)[..35]);
        put_digits::<{ PREFIX_DIGITS - 2 }>(key, &mut a);
        put_digits_in_words::<{ PREFIX_DIGITS - 2 }>(key, &mut b);
        assert_eq!(bytes(&a)[..37], [b"\r\n", &hex.as_bytes()[5..]].concat());
        assert_eq!(bytes(&a)[..37], bytes(&b)[..37]);
    }
}

#[test]
fn every_count_to_a_thousand_and_each_width_renders() {
    let key = Key {
        hi: 0x0123_4567_89AB_CDEF,
        mid: 0xFEDC_BA98_7654_3210,
        lo: 0x9A0F_F0A9,
    };
    let wide = (1..20).flat_map(|e| {
        let p = 10u64.pow(e);
        [p - 1, p, p + 1]
    });
    for kind in [Kind::Sha1, Kind::Ntlm] {
        let key = Key {
            lo: if kind == Kind::Sha1 { key.lo } else { 0 },
            ..key
        };
        let counts: Vec<u64> = (0..1100).chain(wide.clone()).chain([u64::MAX]).collect();
        let items: Vec<(Key, u64)> = counts.iter().map(|&c| (key, c)).collect();
        let hex: String = key.to_bytes().iter().map(|b| format!("{b:02X}")).collect();
        let suffix = &hex[5..kind.hex_len()];
        let want: Vec<String> = counts.iter().map(|c| format!("{suffix}:{c}")).collect();
        assert_eq!(
            String::from_utf8(range_body(kind, &items)).unwrap(),
            want.join("\r\n")
        );
    }
}

#[test]
fn body_format() {
    let kind = Kind::Sha1;
    let a = Key::from_hex(kind, b"5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8").unwrap();
    let b = Key::from_hex(kind, b"5BAA6FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF").unwrap();
    assert_eq!(range_body(kind, &[]), b"");
    assert_eq!(
        range_body(kind, &[(a, 9_545_824), (b, u64::MAX)]),
        b"1E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824\r\nFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:18446744073709551615"
    );
    let n = Key::from_hex(Kind::Ntlm, b"8846F7EAEE8FB117AD06BDD830B7586C").unwrap();
    let mut out = b"kept".to_vec();
    write_range_body(Kind::Ntlm, &[(n, 1), (n, 10)], &mut out);
    assert_eq!(
        out,
        b"kept7EAEE8FB117AD06BDD830B7586C:1\r\n7EAEE8FB117AD06BDD830B7586C:10"
    );
}

fn parse(kind: Kind, prefix: u32, body: &str) -> Result<Vec<(Key, u64)>> {
    let mut out = vec![(Key::default(), 1)];
    let result = parse_range(kind, prefix, body.as_bytes(), &mut out);
    if result.is_err() {
        assert_eq!(out.len(), 1, "nothing appended on error");
    }
    result.map(|()| out.split_off(1))
}

#[test]
fn real_answers_parse() {
    let body = "003D68EB55068C33ACE09247EE4C639306B:3\r\n\
                012C192B2F16F82EA0EB9EF18D9D539B0DD:0\r\n\
                1E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824";
    let got = parse(Kind::Sha1, 0x5BAA6, body).unwrap();
    assert_eq!(got.len(), 2, "the padding line is dropped");
    assert_eq!(
        got[1],
        (Kind::Sha1.hash_password("password"), 9_545_824),
        "prefix and suffix make the hash"
    );
    // LF, lowercase, a final newline; an empty answer.
    let lf = "003d68eb55068c33ace09247ee4c639306b:3\n1e4c9b93f3f0682250b6cf8331b7ee68fd8:1\n";
    assert_eq!(parse(Kind::Sha1, 0x5BAA6, lf).unwrap().len(), 2);
    assert_eq!(parse(Kind::Sha1, 0, "").unwrap(), []);
    let ntlm = "0000A6F3E1C0A8C8A3E6E7BB6C2:12";
    let got = parse(Kind::Ntlm, 0x8846F, ntlm).unwrap();
    assert_eq!(
        got[0].0.to_hex(Kind::Ntlm),
        "8846F0000A6F3E1C0A8C8A3E6E7BB6C2"
    );
}

#[test]
fn etags_follow_the_content() {
    let a = parse(Kind::Sha1, 0x5BAA6, "1E4C9B93F3F0682250B6CF8331B7EE68FD8:3").unwrap();
    let b = parse(Kind::Sha1, 0x5BAA6, "1E4C9B93F3F0682250B6CF8331B7EE68FD8:4").unwrap();
    let tag = range_etag(Kind::Sha1, &a);
    assert_eq!(tag.len(), 34);
    assert!(tag.starts_with('"') && tag.ends_with('"'), "strong: {tag}");
    assert_eq!(tag, range_etag(Kind::Sha1, &a.clone()));
    assert_ne!(tag, range_etag(Kind::Sha1, &b), "a count changed");
    assert_ne!(tag, range_etag(Kind::Sha1, &[]));
    assert_ne!(range_etag(Kind::Sha1, &[]), range_etag(Kind::Ntlm, &[]));
    let many: Vec<(Key, u64)> = (0..200u64)
        .map(|i| {
            (
                Key {
                    hi: i,
                    mid: 0,
                    lo: 0,
                },
                i + 1,
            )
        })
        .collect();
    let mut dropped = many.clone();
    dropped.remove(150);
    assert_ne!(
        range_etag(Kind::Sha1, &many),
        range_etag(Kind::Sha1, &dropped)
    );
}

/// `parse_range` with every line taken the strict way.
fn strict_only(kind: Kind, prefix: u32, body: &[u8]) -> Option<Vec<(Key, u64)>> {
    let ascii = prefix_ascii(prefix_hex(prefix).as_bytes().try_into().unwrap());
    let (mut out, mut pos, mut previous) = (Vec::new(), 0, None);
    while pos < body.len() {
        let (key, count, next) = strict_line(kind, ascii, body, pos).ok()?;
        if previous.is_some_and(|p| p >= key) {
            return None;
        }
        previous = Some(key);
        if count > 0 {
            out.push((key, count));
        }
        pos = next;
    }
    Some(out)
}

#[test]
fn the_quick_path_takes_exactly_what_the_strict_one_does() {
    let good = "003D68EB55068C33ACE09247EE4C639306B:3\r\n\
                012C192B2F16F82EA0EB9EF18D9D539B0DD:0\r\n\
                1E4C9B93F3F0682250B6CF8331B7EE68FD8:18446744073709551615\n\
                1E4C9B93F3F0682250B6CF8331B7EE68FD9:1234567890123456789\r\n\
                FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:1\r";
    let inserts = b"0:9\r\naAfFgG \x80";
    let mut rng = seekless_testkit::Rng::xorshift64(7 | 1);
    let mut next = || (rng.next_u64() >> 33) as usize;
    for round in 0..20_000 {
        let mut body = good.as_bytes().to_vec();
        for _ in 0..1 + round % 3 {
            let at = next() % (body.len() + 1);
            match next() % 4 {
                0 => body.insert(at, inserts[next() % inserts.len()]),
                1 if at < body.len() => {
                    body.remove(at);
                }
                2 if at < body.len() => body[at] = inserts[next() % inserts.len()],
                _ => body.truncate(at),
            }
        }
        let mut out = Vec::new();
        let quick = parse_range(Kind::Sha1, 0x5BAA6, &body, &mut out)
            .ok()
            .map(|()| out);
        assert_eq!(
            quick,
            strict_only(Kind::Sha1, 0x5BAA6, &body),
            "{:?}",
            String::from_utf8_lossy(&body)
        );
    }
}

#[test]
fn malformed_answers_are_errors_with_the_line() {
    let good = "003D68EB55068C33ACE09247EE4C639306B:3";
    for (body, line) in [
        ("003D68EB55068C33ACE09247EE4C639306:3", 1),   // short
        ("003D68EB55068C33ACE09247EE4C639306BB:3", 1), // long
        ("003D68EB55068C33ACE09247EE4C639306G:3", 1),  // not hex
        ("003D68EB55068C33ACE09247EE4C639306B:", 1),   // no count
        ("003D68EB55068C33ACE09247EE4C639306B:-1", 1),
        ("003D68EB55068C33ACE09247EE4C639306B:3 ", 1),
        (
            "003D68EB55068C33ACE09247EE4C639306B:99999999999999999999",
            1,
        ),
        ("003D68EB55068C33ACE09247EE4C639306B 3", 1),
        (&format!("{good}\r\n{good}"), 2),          // duplicate
        (&format!("{good}\r\n\r\n{good}"), 2),      // blank line
        (&format!("1{}\r\n{good}", &good[1..]), 2), // descending
        ("<html>busy</html>", 1),
    ] {
        let e = parse(Kind::Sha1, 0x12345, body).unwrap_err();
        match e.kind() {
            ErrorKind::BadRange {
                prefix, line: l, ..
            } => {
                assert_eq!((prefix.as_str(), *l), ("12345", line), "{body:?}: {e}");
            }
            _ => panic!("{e}"),
        }
    }
    // An SHA-1 answer is not an NTLM one.
    assert!(parse(Kind::Ntlm, 1, good).is_err());
    assert!(parse(Kind::Sha1, RANGES, "").is_err());
    let huge = vec![b'0'; MAX_RANGE_BODY + 1];
    assert!(parse_range(Kind::Sha1, 1, &huge, &mut Vec::new()).is_err());
}
