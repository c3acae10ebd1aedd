//! Which files to scan: a blocks directory's `blkNNNNN.dat` files in number
//! order, or files named explicitly, each with its XOR key.

use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};
use crate::xor::XorKey;

/// One block file to scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its length when listed.
    pub len: u64,
    /// Its XOR key (zero for plain files).
    pub xor: XorKey,
}

/// The number in a `blkNNNNN.dat` file name.
fn blk_number(name: &str) -> Option<u32> {
    name.strip_prefix("blk")?.strip_suffix(".dat")?.parse().ok()
}

/// Expands `paths` into block files: a directory contributes its
/// `blkNNNNN.dat` files in number order, a file is taken as given. The key
/// is `xor_override` when given, otherwise the `xor.dat` next to the file
/// (none means plain).
pub fn list_block_files(paths: &[PathBuf], xor_override: Option<XorKey>) -> Result<Vec<BlockFile>> {
    let mut out = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, "open", e))?;
        if meta.is_dir() {
            let mut numbered = Vec::new();
            let entries = std::fs::read_dir(path).map_err(|e| Error::io(path, "list", e))?;
            for entry in entries {
                let entry = entry.map_err(|e| Error::io(path, "list", e))?;
                let name = entry.file_name();
                if let Some(n) = name.to_str().and_then(blk_number) {
                    numbered.push((n, entry.path()));
                }
            }
            if numbered.is_empty() {
                return Err(ErrorKind::NoBlockFiles { path: path.clone() }.into());
            }
            numbered.sort();
            let key = match xor_override {
                Some(key) => key,
                None => XorKey::from_dir(path)?,
            };
            for (_, file) in numbered {
                let len = std::fs::metadata(&file)
                    .map_err(|e| Error::io(&file, "open", e))?
                    .len();
                out.push(BlockFile {
                    path: file,
                    len,
                    xor: key,
                });
            }
        } else {
            let key = match xor_override {
                Some(key) => key,
                None => XorKey::from_dir(path.parent().unwrap_or(Path::new(".")))?,
            };
            out.push(BlockFile {
                path: path.clone(),
                len: meta.len(),
                xor: key,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::blk_number;

    #[test]
    fn block_file_names() {
        assert_eq!(blk_number("blk00000.dat"), Some(0));
        assert_eq!(blk_number("blk01234.dat"), Some(1234));
        assert_eq!(blk_number("rev00000.dat"), None);
        assert_eq!(blk_number("blk.dat"), None);
        assert_eq!(blk_number("blk00001.dat.tmp"), None);
    }
}
