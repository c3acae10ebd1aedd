//! Transactions and blocks: parsing never panics, and a transaction that
//! parses re-serializes to exactly its bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seekless_blocks::{Network, Transaction, check_block};

fuzz_target!(|data: &[u8]| {
    if let Ok((tx, len)) = Transaction::parse(data, 0) {
        assert_eq!(tx.raw(), &data[..len]);
        assert_eq!(tx.serialize(), &data[..len]);
        assert!(tx.stripped_size() <= len);
        let _ = (tx.txid(), tx.wtxid(), tx.is_coinbase());
    }
    let _ = check_block(data, Network::Regtest.pow_limit());
});
