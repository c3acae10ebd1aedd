//! Errors of the blocks engine as the Python exceptions a caller expects.

use std::path::Path;

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use seekless_blocks::ErrorKind;

pyo3::create_exception!(
    seekless.blocks,
    CorruptBlocksError,
    PyValueError,
    "Block files, a snapshot or a transaction index that are damaged, or a \
     block that breaks one of Core's rules."
);

/// A blocks error as the Python exception a caller expects: a missing file
/// is `FileNotFoundError`, other I/O `OSError` (but a file that ends early,
/// which is damaged), a bad argument `ValueError`, and damaged data or a
/// block that breaks a rule `CorruptBlocksError` (a `ValueError`).
pub(super) fn to_py(e: seekless_blocks::Error) -> PyErr {
    error_with(e, None)
}

/// [`to_py`], the message after `path` when one is given.
pub(super) fn error_with(e: seekless_blocks::Error, path: Option<&Path>) -> PyErr {
    let message = match path {
        Some(path) => format!("{}: {e}", path.display()),
        None => e.to_string(),
    };
    match e.kind() {
        ErrorKind::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(message)
        }
        ErrorKind::NoBlockFiles { .. } => PyFileNotFoundError::new_err(message),
        ErrorKind::Io { source, .. } if source.kind() != std::io::ErrorKind::UnexpectedEof => {
            PyOSError::new_err(message)
        }
        ErrorKind::BadHex { .. }
        | ErrorKind::UnknownNetwork { .. }
        | ErrorKind::HeightPastTip { .. }
        | ErrorKind::TooManyFiles { .. }
        | ErrorKind::OutputHoldsInput { .. }
        | ErrorKind::OutputNotEmpty { .. }
        | ErrorKind::OutputForeign { .. } => PyValueError::new_err(message),
        _ => CorruptBlocksError::new_err(message),
    }
}

/// An I/O error of the blocks engine.
pub(super) fn io(
    path: &Path,
    action: &'static str,
    source: std::io::Error,
) -> seekless_blocks::Error {
    ErrorKind::Io {
        path: path.to_path_buf(),
        action,
        source,
    }
    .into()
}
