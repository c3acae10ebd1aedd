//! Profiling driver (not a benchmark): how lone gets depend on the
//! instructions each one takes. N random pairs (default 1M), then rounds
//! of lone lookups of every key, by `hashbrown::HashMap` and by `ExHash`,
//! each also with 15, 30 and 60 independent instructions (register moves
//! of a constant, which wait for nothing) added to every lookup; prints
//! the fastest of nine rounds of each.
//!
//! Past the caches, lookups of a loop overlap only as far as the
//! processor's window of instructions in flight reaches past the oldest
//! one waiting for memory, so a lookup's time grows with its instruction
//! count even when the instructions added do no work that it waits for:
//!
//! ```sh
//! N=8000000 cargo run --release -p seekless-exhash --example window
//! ```
//!
//! x86-64 only (the padding is inline assembly).

#[cfg(target_arch = "x86_64")]
mod common;

#[cfg(target_arch = "x86_64")]
fn main() {
    use seekless_exhash::ExHash;
    use seekless_exhash::bench::{Pattern, pairs};

    use common::{from_env, lone_gets};

    /// `$n` moves of a constant into a scratch register.
    macro_rules! pad {
        ($n:literal) => {
            // SAFETY: the moves write only the scratch register the
            // assembly is given, and touch neither memory nor the stack.
            unsafe {
                std::arch::asm!(
                    concat!(".rept ", $n, "\nmov {x:e}, 1\n.endr"),
                    x = out(reg) _,
                    options(nomem, nostack, preserves_flags),
                )
            }
        };
    }

    let (n, _) = from_env();
    let all = pairs(n, Pattern::Random);
    let keys: Vec<u64> = all.iter().map(|p| p.0).collect();
    let theirs: hashbrown::HashMap<u64, u64> = all.iter().copied().collect();
    let mut ours = ExHash::new();
    for &(k, v) in &all {
        ours.insert(k, v);
    }
    /// The rounds of `get`'s lone gets with 0, 15, 30 and 60 instructions
    /// added.
    macro_rules! padded {
        ($get:expr) => {{
            let get = $get;
            [
                lone_gets(&keys, get),
                lone_gets(&keys, |k| {
                    pad!(15);
                    get(k)
                }),
                lone_gets(&keys, |k| {
                    pad!(30);
                    get(k)
                }),
                lone_gets(&keys, |k| {
                    pad!(60);
                    get(k)
                }),
            ]
        }};
    }
    // [hashbrown, ExHash] x [+0, +15, +30, +60]
    let mut best = [[f64::MAX; 4]; 2];
    for _ in 0..9 {
        let rounds = [
            padded!(|k: u64| theirs.get(&k).copied()),
            padded!(|k: u64| ours.get(k)),
        ];
        for (b, r) in best.iter_mut().zip(rounds) {
            for (b, r) in b.iter_mut().zip(r) {
                *b = b.min(r);
            }
        }
    }
    println!("lone gets of {n} random pairs, ns (fastest of 9 rounds)");
    println!("| instructions added | +0 | +15 | +30 | +60 |");
    println!("|---|---:|---:|---:|---:|");
    for (name, b) in ["hashbrown", "ExHash"].iter().zip(best) {
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} | {:.1} |",
            b[0], b[1], b[2], b[3]
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    eprintln!("window: x86-64 only");
}
