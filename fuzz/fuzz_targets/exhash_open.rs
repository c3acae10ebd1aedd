//! Arbitrary bytes opened as an exhash file: opening must return an error
//! or a table whose invariants hold and that survives a commit and reopen.
#![no_main]

use std::io;

use libfuzzer_sys::fuzz_target;
use seekless_exhash::{Device, ExHash};

#[derive(Debug)]
struct VecDevice(Vec<u8>);

impl Device for VecDevice {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
        let src = self
            .0
            .get(start..start.saturating_add(buf.len()))
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        let end = offset as usize + buf.len();
        if self.0.len() < end {
            self.0.resize(end, 0);
        }
        self.0[offset as usize..end].copy_from_slice(buf);
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn size(&mut self) -> io::Result<u64> {
        Ok(self.0.len() as u64)
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(mut table) = ExHash::open_on(VecDevice(data.to_vec())) else {
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
    let image = std::mem::take(&mut ExHash::into_store(table).into_device().0);
    let reopened = ExHash::open_on(VecDevice(image)).unwrap();
    assert_eq!(reopened.get(12345), Some(678));
    assert!(reopened.len() >= pairs.len() as u64);
});
