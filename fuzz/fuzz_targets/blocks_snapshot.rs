//! UTXO snapshots: reading never panics, and a snapshot that reads in the
//! form Core writes (`canonical`) writes back to exactly its bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seekless_blocks::{MuHash3072, SnapshotReader, SnapshotWriter};

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = SnapshotReader::new(data) else {
        return;
    };
    let meta = *reader.metadata();
    let mut coins = Vec::new();
    let mut hash = MuHash3072::new();
    for item in reader.by_ref() {
        match item {
            Ok((outpoint, coin)) => {
                hash.insert_coin(&outpoint, &coin);
                coins.push((outpoint, coin));
            }
            Err(_) => return,
        }
    }
    let _ = hash.finalize();
    if !reader.canonical() {
        return;
    }
    let mut writer = SnapshotWriter::new(Vec::new(), meta.network, meta.base, meta.coins)
        .expect("writing to memory");
    for (outpoint, coin) in &coins {
        writer.push(outpoint, coin).expect("a canonical coin writes");
    }
    assert_eq!(writer.finish().expect("as many coins as declared"), data);
});
