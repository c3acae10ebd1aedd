//! An index named on the command line: opened, or an error that names the
//! file and what it really is (a directory, a corpus, anything else).

use std::path::Path;

use seekless_pwned::{ErrorKind, Index};

/// Opens an index, naming the file when it is not one (a directory, a
/// corpus, anything else).
pub fn open(path: &Path) -> std::result::Result<Index, String> {
    if path.is_dir() {
        return Err(format!("{}: is a directory, not an index", path.display()));
    }
    Index::open(path).map_err(|e| match e.kind() {
        ErrorKind::Io { .. } => e.to_string(),
        _ => format!("{}: {e}", path.display()),
    })
}
