//! Scaffolding shared by the workspace's tests, benchmarks and examples,
//! kept in one place instead of a copy per file:
//!
//! - [`TempDir`]: a fresh directory, removed on drop;
//! - [`Rng`]: seeded, reproducible random numbers (several named
//!   generators, since tests depend on the exact sequences);
//! - [`hex`] and [`hashes`]: random hash digits, and random hash bytes
//!   with counts, as the corpora of the pwned tests use;
//! - [`write_via_temp`]: write a file under another name, then rename it
//!   into place;
//! - [`measure`]: timing, medians and page-cache eviction for the macro
//!   benchmarks.
//!
//! It depends on no engine crate, so every engine can dev-depend on it.

pub mod measure;
mod rng;
mod tempdir;

pub use rng::Rng;
pub use tempdir::{KEEP_VAR, TempDir};

use std::path::{Path, PathBuf};

/// `digits` random upper-case hexadecimal digits, drawn 16 at a time from
/// `rng` (`{:016X}` of each `next_u64`, the last one cut short).
pub fn hex(rng: &mut Rng, digits: usize) -> String {
    let mut h = String::with_capacity(digits + 16);
    while h.len() < digits {
        h.push_str(&format!("{:016X}", rng.next_u64()));
    }
    h.truncate(digits);
    h
}

/// `n` random hashes of `bytes` bytes (16 for NTLM, 20 for SHA-1; the
/// rest of the array zero), each with a count from 1 to `max_count`: per
/// hash, bytes 0..8 and 8..16 are one `next_u64` each (big-endian), bytes
/// 16..20 the low half of a third (SHA-1 only), then the count is
/// `1 + next_u64 % max_count`.
pub fn hashes(rng: &mut Rng, n: usize, bytes: usize, max_count: u64) -> Vec<([u8; 20], u64)> {
    assert!(bytes == 16 || bytes == 20, "a hash of 16 or 20 bytes");
    (0..n)
        .map(|_| {
            let mut hash = [0u8; 20];
            hash[..8].copy_from_slice(&rng.next_u64().to_be_bytes());
            hash[8..16].copy_from_slice(&rng.next_u64().to_be_bytes());
            if bytes == 20 {
                hash[16..].copy_from_slice(&(rng.next_u64() as u32).to_be_bytes());
            }
            (hash, 1 + rng.next_u64() % max_count)
        })
        .collect()
}

/// Creates `path` whole or not at all: `write` writes the file at the
/// temporary path it is given (`PATH.partial`, beside `path`), which is then
/// synced and renamed over `path`. Returns what `write` returned.
pub fn write_via_temp<T>(path: &Path, write: impl FnOnce(&Path) -> T) -> T {
    let mut name = path.file_name().expect("a file name").to_os_string();
    name.push(".partial");
    let partial: PathBuf = path.with_file_name(name);
    let out = write(&partial);
    std::fs::File::open(&partial)
        .and_then(|f| f.sync_all())
        .unwrap_or_else(|e| panic!("sync {}: {e}", partial.display()));
    std::fs::rename(&partial, path)
        .unwrap_or_else(|e| panic!("rename {} to {}: {e}", partial.display(), path.display()));
    out
}

/// [`write_via_temp`] of `bytes`.
pub fn write_atomic(path: &Path, bytes: impl AsRef<[u8]>) {
    write_via_temp(path, |partial| {
        std::fs::write(partial, bytes)
            .unwrap_or_else(|e| panic!("write {}: {e}", partial.display()))
    });
}

/// The names of the entries of `dir`, sorted.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_the_generators_words_in_upper_case() {
        let mut a = Rng::splitmix64(1);
        let mut b = Rng::splitmix64(1);
        let h = hex(&mut a, 40);
        assert_eq!(h.len(), 40);
        let words = format!(
            "{:016X}{:016X}{:016X}",
            b.next_u64(),
            b.next_u64(),
            b.next_u64()
        );
        assert_eq!(h, words[..40]);
    }

    #[test]
    fn hashes_are_the_generators_words_big_endian() {
        let mut a = Rng::splitmix64(2);
        let mut b = Rng::splitmix64(2);
        let sha1 = hashes(&mut a, 3, 20, 10);
        let ntlm = hashes(&mut a, 3, 16, 10);
        for (hash, count) in sha1 {
            assert_eq!(hash[..8], b.next_u64().to_be_bytes());
            assert_eq!(hash[8..16], b.next_u64().to_be_bytes());
            assert_eq!(hash[16..], (b.next_u64() as u32).to_be_bytes());
            assert_eq!(count, 1 + b.next_u64() % 10);
        }
        for (hash, count) in ntlm {
            assert_eq!(hash[..8], b.next_u64().to_be_bytes());
            assert_eq!(hash[8..16], b.next_u64().to_be_bytes());
            assert_eq!(hash[16..], [0; 4]);
            assert!((1..=10).contains(&count));
            b.next_u64();
        }
    }

    #[test]
    fn write_atomic_leaves_only_the_file() {
        let dir = TempDir::new("atomic");
        let path = dir.join("f.txt");
        write_atomic(&path, "old");
        write_atomic(&path, b"new");
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["f.txt"]);
    }
}
