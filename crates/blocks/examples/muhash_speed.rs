//! Time per coin of MuHash3072 (the `muhash` of `gettxoutsetinfo`), the
//! cost `blocks utxo` pays once per coin: SHA-256 of the coin, 384 bytes of
//! ChaCha20 and one 3072-bit modular multiplication. Not a test: run with
//! `cargo run --release -p seekless-blocks --example muhash_speed [COINS]`.

use std::time::Instant;

use seekless_blocks::{Coin, MuHash3072, OutPoint};

fn main() {
    let coins: u32 = std::env::args()
        .nth(1)
        .map(|arg| arg.parse().expect("COINS is a number"))
        .unwrap_or(1_000_000);
    let mut coin = Coin {
        value: 12_345_678,
        height: 800_000,
        coinbase: false,
        // A pay-to-witness-pubkey-hash script, the most common kind.
        script: [&[0x00, 0x14][..], &[0x42; 20]].concat(),
    };
    let mut hash = MuHash3072::new();
    let start = Instant::now();
    for i in 0..coins {
        let mut txid = [0u8; 32];
        txid[..4].copy_from_slice(&i.to_le_bytes());
        coin.value = i as u64;
        hash.insert_coin(&OutPoint { txid, vout: i & 3 }, &coin);
    }
    let inserts = start.elapsed();
    let start = Instant::now();
    let digest = hash.finalize();
    let finalize = start.elapsed();
    let mut removed = hash.clone();
    removed.remove(b"one element");
    let start = Instant::now();
    removed.finalize();
    let inverse = start.elapsed();
    println!(
        "{coins} coins: {:.0} ns per insert; finalize {:.2} ms, with a removal {:.2} ms ({:02x?})",
        inserts.as_nanos() as f64 / coins as f64,
        finalize.as_secs_f64() * 1e3,
        inverse.as_secs_f64() * 1e3,
        &digest[..4]
    );
}
