//! The command line's tests, one module a subject (each file says what it
//! covers), in one test program: `cargo test -p seekless --test cli`, and a
//! subject's alone by its name, e.g. `cargo test -p seekless --test cli
//! serve::`.

mod common;

mod bencode;
mod blocks;
mod blocks_export;
mod blocks_state;
mod blocks_txindex;
mod blocks_utxo;
mod bundle;
mod check_page;
mod conventions;
mod exhash;
mod full_disk;
mod mirror;
mod okon;
mod probe;
mod pwned;
mod serve;
mod serve_stand_in;
mod serve_tls;
mod update_proxy;
mod update_tls;
