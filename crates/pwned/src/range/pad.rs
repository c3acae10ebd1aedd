//! Padding of range answers (`Add-Padding: true`): count-0 lines mixed
//! into the real ones so every answer has about the same size.

use crate::format::hash::{Key, Kind};

/// Lines a padded answer holds at least.
pub const PAD_MIN: usize = 800;
/// Extra padding lines, drawn uniformly from `0..=PAD_SPREAD`.
pub const PAD_SPREAD: usize = 200;

/// splitmix64: padding needs only unpredictable-looking suffixes (they
/// carry count 0, so whoever reads the body knows them anyway).
pub(super) fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The range `prefix` (the pairs `items`, sorted) with random count-0
/// pairs mixed in, as `Add-Padding: true` asks: `max(real, PAD_MIN) +
/// uniform(0..=PAD_SPREAD)` pairs in all, in hash order, none equal to a
/// real hash, so every range of the real corpus (≈ 800–1,100 hashes each)
/// answers with 800 to ~1,300 lines. `seed` picks the padding.
pub fn pad_range(items: &[(Key, u64)], kind: Kind, prefix: u32, seed: u64) -> Vec<(Key, u64)> {
    let mut state = seed;
    let spread = (splitmix(&mut state) % (PAD_SPREAD as u64 + 1)) as usize;
    let target = items.len().max(PAD_MIN) + spread;
    let wanted = target - items.len();
    let mut fake: Vec<Key> = Vec::with_capacity(wanted);
    // A clash with a real or another fake hash has probability ~2^-130 a
    // draw; the loop is bounded all the same.
    for _ in 0..8 {
        while fake.len() < wanted {
            let key = Key {
                hi: u64::from(prefix) << 44 | splitmix(&mut state) >> 20,
                mid: splitmix(&mut state),
                lo: match kind {
                    Kind::Sha1 => splitmix(&mut state) as u32,
                    Kind::Ntlm => 0,
                },
            };
            fake.push(key);
        }
        fake.sort_unstable();
        fake.dedup();
        fake.retain(|k| items.binary_search_by(|(real, _)| real.cmp(k)).is_err());
        if fake.len() == wanted {
            break;
        }
    }
    let mut out = Vec::with_capacity(items.len() + fake.len());
    let mut fake = fake.into_iter().peekable();
    for &(key, count) in items {
        while let Some(f) = fake.next_if(|f| *f < key) {
            out.push((f, 0));
        }
        out.push((key, count));
    }
    out.extend(fake.map(|f| (f, 0)));
    out
}
