//! The chainstate directory's files (`blocks utxo --state`): the tip
//! record, undo data and the journal never panic when read; a tip record
//! that reads writes back to exactly its bytes, undo data to bytes that
//! read back to themselves (a coin's script may read from a longer form
//! than the one written).
#![no_main]

use libfuzzer_sys::fuzz_target;
use seekless_blocks::state_files::{journal_pages, tip_round_trip, undo_round_trip};

fuzz_target!(|data: &[u8]| {
    if let Some(bytes) = tip_round_trip(data) {
        assert_eq!(bytes, data);
    }
    if let Some(bytes) = undo_round_trip(data) {
        assert_eq!(undo_round_trip(&bytes).as_deref(), Some(&bytes[..]));
    }
    let _ = journal_pages(data);
});
