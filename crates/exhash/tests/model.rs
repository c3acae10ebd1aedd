//! The table replayed against `HashMap`: random operation sequences at sizes
//! that force many splits and merges, and patterned keys.

use std::collections::HashMap;

use proptest::prelude::*;
use seekless_exhash::ExHash;
use seekless_testkit::Rng;

#[derive(Debug, Clone)]
enum Op {
    Put(u64, u64),
    Del(u64),
    Get(u64),
    Iter,
}

/// Values of every encoded size: 0, small, mid, full 64-bit.
fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        0u64..256,
        0u64..1 << 24,
        any::<u64>(),
        (0u32..64).prop_map(|s| 1u64 << s),
    ]
}

/// Keys drawn from a small universe so that overwrites and deletes hit.
fn op(universe: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..universe, value()).prop_map(|(k, v)| Op::Put(k.wrapping_mul(0x9E37_79B9_7F4A_7C15), v)),
        3 => (0..universe).prop_map(|k| Op::Del(k.wrapping_mul(0x9E37_79B9_7F4A_7C15))),
        2 => (0..universe).prop_map(|k| Op::Get(k.wrapping_mul(0x9E37_79B9_7F4A_7C15))),
        1 => Just(Op::Iter),
    ]
}

fn replay(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut table = ExHash::new();
    let mut model = HashMap::new();
    for op in ops {
        match *op {
            Op::Put(k, v) => prop_assert_eq!(table.insert(k, v), model.insert(k, v)),
            Op::Del(k) => prop_assert_eq!(table.remove(k), model.remove(&k)),
            Op::Get(k) => prop_assert_eq!(table.get(k), model.get(&k).copied()),
            Op::Iter => {
                let mut got: Vec<_> = table.iter().collect();
                got.sort_unstable();
                let mut want: Vec<_> = model.iter().map(|(&k, &v)| (k, v)).collect();
                want.sort_unstable();
                prop_assert_eq!(got, want);
            }
        }
        prop_assert_eq!(table.len(), model.len() as u64);
    }
    table.check_invariants().map_err(TestCaseError::fail)?;
    for (&k, &v) in &model {
        prop_assert_eq!(table.get(k), Some(v));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(debug_assertions) { 24 } else { 200 }))]

    #[test]
    fn small_universe_matches_hashmap(ops in prop::collection::vec(op(300), 1..2000)) {
        replay(&ops)?;
    }

    #[test]
    fn large_universe_matches_hashmap(ops in prop::collection::vec(op(20_000), 1..6000)) {
        replay(&ops)?;
    }
}

/// Grow to force many splits, shrink to force merges and directory
/// shrinking, then grow again, checking against the model throughout.
fn grow_shrink(keys: &[u64]) {
    let mut table = ExHash::new();
    let mut model = HashMap::new();
    for (i, &k) in keys.iter().enumerate() {
        let v = (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D) >> (i % 64);
        assert_eq!(table.insert(k, v), model.insert(k, v));
    }
    table.check_invariants().unwrap();
    let grown = table.stats();
    assert!(grown.pages > 16, "{grown:?}");
    for (&k, &v) in &model {
        assert_eq!(table.get(k), Some(v), "key {k}");
    }
    let mut got: Vec<_> = table.iter().collect();
    got.sort_unstable();
    let mut want: Vec<_> = model.iter().map(|(&k, &v)| (k, v)).collect();
    want.sort_unstable();
    assert_eq!(got, want);
    // Delete all but every 50th key.
    for (i, &k) in keys.iter().enumerate() {
        if i % 50 != 0 {
            assert_eq!(table.remove(k), model.remove(&k), "remove {k}");
        }
    }
    table.check_invariants().unwrap();
    let shrunk = table.stats();
    assert!(
        shrunk.pages * 8 < grown.pages,
        "merges: {grown:?} -> {shrunk:?}"
    );
    assert!(
        shrunk.global_depth < grown.global_depth,
        "directory shrinks: {grown:?} -> {shrunk:?}"
    );
    for &k in keys {
        assert_eq!(table.get(k), model.get(&k).copied());
    }
    for &k in keys {
        assert_eq!(table.remove(k), model.remove(&k));
    }
    assert!(table.is_empty());
    table.check_invariants().unwrap();
    assert_eq!(table.iter().count(), 0);
    assert_eq!(table.stats().pages, 2);
}

fn n() -> u64 {
    if cfg!(debug_assertions) {
        60_000
    } else {
        400_000
    }
}

#[test]
fn random_keys_split_and_merge() {
    let mut rng = Rng::lcg(42);
    let keys: Vec<u64> = (0..n())
        .map(|_| rng.next_u64())
        .collect::<std::collections::HashSet<_>>()
        .into_iter()
        .collect();
    grow_shrink(&keys);
}

#[test]
fn sequential_keys() {
    let keys: Vec<u64> = (0..n()).collect();
    grow_shrink(&keys);
}

#[test]
fn multiples_of_4096() {
    let keys: Vec<u64> = (0..n()).map(|i| i * 4096).collect();
    grow_shrink(&keys);
    // Patterned keys must not blow up the directory.
    let mut table = ExHash::new();
    for &k in &keys {
        table.insert(k, k);
    }
    let s = table.stats();
    assert!(1usize << s.global_depth <= 4 * s.pages, "{s:?}");
}

#[test]
fn keys_sharing_one_home_group_and_fingerprint() {
    // Keys whose hashes agree on their low 31 bits have the same home
    // group, quotient and fingerprint in every page: probe sequences run
    // to their reach, every tag matches, and pages split deep.
    use seekless_exhash::mix::unmix;
    let keys: Vec<u64> = (0..20_000u64)
        .map(|i| unmix((i.wrapping_mul(0x9E37_79B9_7F4A_7C15) << 31) | 0x1234_5678))
        .collect();
    let mut table = ExHash::new();
    let mut model = HashMap::new();
    for (i, &k) in keys.iter().enumerate() {
        assert_eq!(table.insert(k, i as u64), model.insert(k, i as u64));
    }
    table.check_invariants().unwrap();
    for (&k, &v) in &model {
        assert_eq!(table.get(k), Some(v));
    }
    for &k in keys.iter().step_by(2) {
        assert_eq!(table.remove(k), model.remove(&k));
    }
    table.check_invariants().unwrap();
    assert_eq!(table.iter().count(), model.len());
}

#[test]
fn adversarial_keys_spill_without_loss() {
    // Keys identical in all but their lowest hash bits cannot be separated
    // by any depth the directory allows: they go to the spill map.
    use seekless_exhash::mix::unmix;
    let keys: Vec<u64> = (0..3_000u64)
        .map(|i| unmix(0xABCD_0000_0000_0000 | i))
        .collect();
    let mut table = ExHash::new();
    for (i, &k) in keys.iter().enumerate() {
        assert_eq!(table.insert(k, i as u64), None);
    }
    table.check_invariants().unwrap();
    let s = table.stats();
    assert!(
        s.spilled > 0 && s.global_depth <= seekless_exhash::MAX_DEPTH,
        "{s:?}"
    );
    for (i, &k) in keys.iter().enumerate() {
        assert_eq!(table.get(k), Some(i as u64));
        assert_eq!(table.insert(k, i as u64 + 1), Some(i as u64));
    }
    assert_eq!(table.iter().count(), keys.len());
    for &k in &keys {
        assert!(table.remove(k).is_some());
    }
    assert!(table.is_empty());
    table.check_invariants().unwrap();
}

#[test]
fn batch_calls_match_single_calls() {
    let pairs: Vec<(u64, u64)> = (0..30_000u64)
        .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 50_000, i))
        .collect();
    let mut batched = ExHash::new();
    batched.insert_many(&pairs);
    let mut single = ExHash::new();
    let mut model = HashMap::new();
    for &(k, v) in &pairs {
        single.insert(k, v);
        model.insert(k, v);
    }
    assert_eq!(batched.len(), model.len() as u64);
    batched.check_invariants().unwrap();
    let keys: Vec<u64> = (0..60_000u64).collect();
    let mut out = vec![Some(7)];
    batched.get_many(&keys, &mut out);
    assert_eq!(out.len(), keys.len());
    for (&k, got) in keys.iter().zip(&out) {
        assert_eq!(*got, model.get(&k).copied(), "key {k}");
        assert_eq!(*got, single.get(k));
    }
}

#[test]
fn batches_shorter_and_longer_than_the_prefetch_distance_match_single_calls() {
    // The batch keeps each key's place from its first prefetch to its
    // lookup, sixteen keys later: batches of every length around that,
    // and the empty one, half of their keys absent.
    let mut table = ExHash::new();
    for i in 0..5_000u64 {
        table.insert(i.wrapping_mul(0x9E37_79B9_7F4A_7C15), i);
    }
    let mut out = Vec::new();
    for len in 0..=40u64 {
        let keys: Vec<u64> = (0..len)
            .map(|i| (i * 7919 % 10_000).wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        table.get_many(&keys, &mut out);
        let single: Vec<Option<u64>> = keys.iter().map(|&k| table.get(k)).collect();
        assert_eq!(out, single, "{len} keys");
        assert!(
            len < 3 || single.iter().any(Option::is_none),
            "{len}: a miss among them"
        );
    }
}

#[test]
fn with_capacity_lays_out_pages_and_stats_describe_them() {
    let mut table = ExHash::with_capacity(200_000);
    let before = table.stats();
    assert!(before.pages >= 256, "{before:?}");
    assert_eq!(before.len, 0);
    for i in 0..50_000u64 {
        table.insert(i.wrapping_mul(0x9E37_79B9_7F4A_7C15), i);
    }
    table.check_invariants().unwrap();
    let s = table.stats();
    assert_eq!(s.len, 50_000);
    assert!(s.fill > 0.0 && s.fill < 1.0, "{s:?}");
    assert!(
        s.longest_probe >= 1 && s.longest_probe <= seekless_exhash::REACH,
        "{s:?}"
    );
    assert!(s.max_local_depth <= s.global_depth, "{s:?}");
    assert_eq!(s.memory_bytes, table.memory_bytes());
    assert!(table.contains_key(0x9E37_79B9_7F4A_7C15) && !table.contains_key(1));
}

#[test]
fn pages_cross_the_change_of_geometry_both_ways() {
    // Pages of depth 8 and less have wider key fields and fewer groups
    // than deeper ones: splitting from 8 to 9 and merging back places
    // every entry again.
    let keys: Vec<u64> = (0..150_000u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x1234)
        .collect();
    let mut table = ExHash::new();
    for &k in &keys {
        table.insert(k, !k);
    }
    table.check_invariants().unwrap();
    assert!(table.stats().max_local_depth >= 9, "{:?}", table.stats());
    for &k in keys.iter().skip(1).step_by(2) {
        assert_eq!(table.get(k), Some(!k));
    }
    for (i, &k) in keys.iter().enumerate() {
        if i % 40 != 0 {
            assert_eq!(table.remove(k), Some(!k));
        }
    }
    table.check_invariants().unwrap();
    assert!(table.stats().max_local_depth < 9, "{:?}", table.stats());
    for (i, &k) in keys.iter().enumerate() {
        assert_eq!(table.get(k), (i % 40 == 0).then_some(!k));
    }
}
