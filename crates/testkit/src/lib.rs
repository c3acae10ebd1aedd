//! Scaffolding shared by the workspace's tests, benchmarks and examples,
//! kept in one place instead of a copy per file:
//!
//! - [`TempDir`]: a fresh directory, removed on drop;
//! - [`Rng`]: seeded, reproducible random numbers (several named
//!   generators, since tests depend on the exact sequences);
//! - [`hex`]: random hash digits, as the corpora of the pwned tests use;
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
