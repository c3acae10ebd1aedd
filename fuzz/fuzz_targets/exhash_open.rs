//! Arbitrary bytes opened as an exhash file: opening must return an error
//! or a table whose invariants hold and that survives a commit and reopen.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seekless_exhash::ExHash;

fuzz_target!(|data: &[u8]| {
    let Ok(mut table) = ExHash::open_on(data.to_vec()) else {
        return;
    };
    table.check_invariants().unwrap();
    let pairs: Vec<(u64, u64)> = table.iter().collect();
    assert_eq!(pairs.len() as u64, table.len());
    for &(k, v) in &pairs {
        assert_eq!(table.get(k), Some(v));
    }
    table.insert(12345, 678);
    table.commit().unwrap();
    let image = ExHash::into_store(table).into_device();
    let reopened = ExHash::open_on(image).unwrap();
    assert_eq!(reopened.get(12345), Some(678));
    assert!(reopened.len() >= pairs.len() as u64);
});
