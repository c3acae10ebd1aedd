//! Arbitrary range answers: `parse_range` (its SIMD path where the
//! processor has one) gives exactly what the scalar path gives, the same
//! pairs or the same error, for SHA-1 and NTLM (the first byte chooses).
#![no_main]

use libfuzzer_sys::fuzz_target;
use seekless_pwned::Kind;
use seekless_pwned::test_util::{parse_range, parse_range_scalar};

fuzz_target!(|data: &[u8]| {
    let Some((&choice, body)) = data.split_first() else {
        return;
    };
    let kind = if choice & 1 == 0 {
        Kind::Sha1
    } else {
        Kind::Ntlm
    };
    let prefix = 0x5BAA6;
    let (mut fast, mut scalar) = (Vec::new(), Vec::new());
    let fast_result = parse_range(kind, prefix, body, &mut fast).map_err(|e| e.to_string());
    let scalar_result =
        parse_range_scalar(kind, prefix, body, &mut scalar).map_err(|e| e.to_string());
    assert_eq!(fast_result, scalar_result);
    assert_eq!(fast, scalar);
});
