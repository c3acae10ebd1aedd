//! Design probe (not a benchmark, not the table): what a lone get would
//! cost if a key's home were one 64-byte line of its page, four pairs to a
//! line, instead of a group of 16 tags and 224 bytes of slots.
//!
//! It lays `N` random pairs (the profiling examples' pairs) into 8 KiB
//! pages of 128 such lines, about 360 pairs a page (as many as the
//! table's pages hold, 22-23 bytes a pair), found through a directory as
//! the table finds its pages (`DIRECT` set: the page computed from the
//! hash, no directory), keys mixed by the table's mixer, a full line
//! followed by the next. Then it times lone gets of every key against
//! `hashbrown::HashMap`'s in the same rounds and prints the best round of
//! each. Whole keys and values stand
//! in for the tags and packed slots a real line would hold; what is
//! measured is the memory each lookup waits for and the instructions
//! around it.
//!
//! A line's four keys are compared one at a time, or, when the build
//! enables AVX-512 (the second build below, on a host that has it), in one
//! load of the whole line, the value taken from the same register:
//!
//! ```sh
//! cargo build --release -p seekless-exhash --examples
//! N=8000000 target/release/examples/line_buckets
//! RUSTFLAGS="-C target-cpu=native" cargo build --release -p seekless-exhash --examples
//! N=8000000 target/release/examples/line_buckets
//! ```

use seekless_exhash::bench::{Pattern, pairs};
use seekless_exhash::mix::mix;
use seekless_exhash::{PAGE_SIZE, Page};

mod common;
use common::{from_env, lone_gets};

/// Lines in a page.
const LINES: usize = PAGE_SIZE / 64;
/// Pairs a page, about what the table's pages hold.
const PAIRS_A_PAGE: usize = 360;

/// One line: four keys, then their values (key 0: free).
#[repr(C, align(64))]
#[derive(Clone, Copy, Default)]
struct Line {
    keys: [u64; 4],
    values: [u64; 4],
}

impl Line {
    /// The value of `key` if the line holds it, and whether the line has a
    /// free slot.
    #[cfg(not(all(target_arch = "x86_64", target_feature = "avx512f")))]
    #[inline(always)]
    fn find(&self, key: u64) -> (Option<u64>, bool) {
        let mut free = false;
        for i in 0..4 {
            if self.keys[i] == key {
                return (Some(self.values[i]), false);
            }
            free |= self.keys[i] == 0;
        }
        (None, free)
    }

    /// The same in one load of the whole line: the keys compared at once,
    /// the value moved out of the register by the match, so that only one
    /// load waits for the line.
    #[cfg(all(target_arch = "x86_64", target_feature = "avx512f"))]
    #[inline(always)]
    fn find(&self, key: u64) -> (Option<u64>, bool) {
        use std::arch::x86_64::{
            _mm_cvtsi128_si64, _mm512_castsi512_si128, _mm512_cmpeq_epi64_mask, _mm512_load_si512,
            _mm512_maskz_compress_epi64, _mm512_set1_epi64, _mm512_setzero_si512,
        };
        // SAFETY: the build enables AVX-512F (the cfg above); a line is 64
        // bytes aligned to 64, so the aligned load reads exactly it.
        unsafe {
            let v = _mm512_load_si512((self as *const Line).cast());
            let hit = _mm512_cmpeq_epi64_mask(v, _mm512_set1_epi64(key as i64)) & 0xf;
            let free = _mm512_cmpeq_epi64_mask(v, _mm512_setzero_si512()) & 0xf;
            let value = _mm512_maskz_compress_epi64(hit << 4, v);
            let found = (hit != 0).then(|| _mm_cvtsi128_si64(_mm512_castsi512_si128(value)) as u64);
            (found, free != 0)
        }
    }
}

struct Lines {
    pages: Vec<[Line; LINES]>,
    dir: Vec<u32>,
    shift: u32,
    direct: bool,
}

impl Lines {
    fn new(n: usize, direct: bool) -> Lines {
        let pages = n / PAIRS_A_PAGE + 1;
        let bits = usize::BITS - pages.leading_zeros() + 1;
        Lines {
            pages: vec![[Line::default(); LINES]; pages],
            dir: (0..1usize << bits)
                .map(|i| ((i * pages) >> bits) as u32)
                .collect(),
            shift: 64 - bits,
            direct,
        }
    }

    #[inline(always)]
    fn page(&self, h: u64) -> usize {
        if self.direct {
            (((h >> 32) * self.pages.len() as u64) >> 32) as usize
        } else {
            self.dir[(h >> self.shift) as usize] as usize
        }
    }

    fn insert(&mut self, key: u64, value: u64) {
        let h = mix(key);
        let page = self.page(h);
        let mut at = h as usize % LINES;
        loop {
            let line = &mut self.pages[page][at];
            if let Some(i) = line.keys.iter().position(|&k| k == 0) {
                line.keys[i] = key;
                line.values[i] = value;
                return;
            }
            at = (at + 1) % LINES;
        }
    }

    #[inline(always)]
    fn get(&self, key: u64) -> Option<u64> {
        let h = mix(key);
        let page = &self.pages[self.page(h)];
        let mut at = h as usize % LINES;
        loop {
            let (found, free) = page[at].find(key);
            if found.is_some() {
                return found;
            }
            if free {
                return None;
            }
            at = (at + 1) % LINES;
        }
    }
}

fn main() {
    const _: () = assert!(size_of::<[Line; LINES]>() == size_of::<Page>());
    let (n, _) = from_env();
    let all = pairs(n, Pattern::Random);
    let keys: Vec<u64> = all.iter().map(|p| p.0).collect();
    let mut lines = Lines::new(n, std::env::var_os("DIRECT").is_some());
    let mut brown = hashbrown::HashMap::new();
    for &(k, v) in &all {
        lines.insert(k, v);
        brown.insert(k, v);
    }
    let (mut ours, mut theirs) = (f64::MAX, f64::MAX);
    for _ in 0..9 {
        ours = ours.min(lone_gets(&keys, |k| lines.get(k)));
        theirs = theirs.min(lone_gets(&keys, |k| brown.get(&k).copied()));
    }
    println!(
        "best lone get: lines {ours:.1} ns, hashbrown {theirs:.1} ns ({:.2}x)",
        ours / theirs
    );
}
