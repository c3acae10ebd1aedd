//! Python bindings: `seekless.PwnedIndex` (the pwned engine), an index
//! opened once (memory-mapped) and shared by every thread, answering each
//! password with one page read; and bencode decoding and torrent metadata
//! (the bencode engine). The Python package (`python/seekless`) re-exports
//! these and adds the Django validator.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use pyo3::exceptions::{PyException, PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyDict, PyList};
use seekless_bencode::{Kind as BencodeKind, Node};
use seekless_pwned::{ErrorKind, Index, Key, Kind};

pyo3::create_exception!(
    seekless,
    CorruptIndexError,
    PyException,
    "The file is not a seekless index, or it is damaged."
);

/// A pwned error as the Python exception a caller expects: a missing file
/// is `FileNotFoundError`, other I/O `OSError`, a malformed hash
/// `ValueError`, a file that is not a sound index `CorruptIndexError`.
fn to_py(e: seekless_pwned::Error) -> PyErr {
    let message = e.to_string();
    match e.kind() {
        ErrorKind::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(message)
        }
        ErrorKind::Io { .. } => PyOSError::new_err(message),
        ErrorKind::BadHash { .. } | ErrorKind::WrongKind { .. } => PyValueError::new_err(message),
        _ => CorruptIndexError::new_err(message),
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Sha1 => "sha1",
        Kind::Ntlm => "ntlm",
    }
}

/// A Pwned Passwords index built by `seekless pwned prepare` or `update`.
#[pyclass(frozen, module = "seekless")]
struct PwnedIndex {
    /// `None` once closed; lookups hold their own reference, so closing
    /// while another thread looks up is safe.
    index: RwLock<Option<Arc<Index>>>,
    path: PathBuf,
}

impl PwnedIndex {
    fn index(&self) -> PyResult<Arc<Index>> {
        let guard = self.index.read().unwrap_or_else(|e| e.into_inner());
        guard
            .clone()
            .ok_or_else(|| PyValueError::new_err("the index is closed"))
    }
}

#[pymethods]
impl PwnedIndex {
    /// Opens the index at `path` (memory-mapped; the file must not be
    /// rewritten in place while open: replace it by renaming a new file
    /// over it).
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<PwnedIndex> {
        let opened = py.detach(|| Index::open(&path)).map_err(to_py)?;
        Ok(PwnedIndex {
            index: RwLock::new(Some(Arc::new(opened))),
            path,
        })
    }

    /// How many times `password` appears in the corpus (0: not listed).
    fn count(&self, py: Python<'_>, password: &str) -> PyResult<u64> {
        let index = self.index()?;
        let key = index.kind().hash_password(password);
        py.detach(|| index.count(key)).map_err(to_py)
    }

    /// The count of a hash given in hex (40 digits for SHA-1, 32 for NTLM,
    /// either case).
    fn count_hash(&self, py: Python<'_>, hex: &str) -> PyResult<u64> {
        let index = self.index()?;
        py.detach(|| index.count_hex(hex)).map_err(to_py)
    }

    /// The counts of many passwords, in order; hashing and lookups run
    /// with the GIL released, lookups overlapped, large batches split
    /// across the cores.
    fn count_many(&self, py: Python<'_>, passwords: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
        let index = self.index()?;
        let passwords: Vec<PyBackedStr> = passwords
            .try_iter()?
            .map(|item| item?.extract::<PyBackedStr>())
            .collect::<PyResult<_>>()?;
        let kind = index.kind();
        py.detach(|| count_each(&index, &passwords, |p| Ok(kind.hash_password(p))))
            .map_err(Failure::into_py)
    }

    /// The counts of many hashes in hex (of the index's kind, 40 digits
    /// for SHA-1, 32 for NTLM, either case), in order; parsing and lookups
    /// run with the GIL released, as `count_many`'s. A malformed hash
    /// raises `ValueError` naming its position (0-based) and what is wrong.
    fn count_many_hashes(&self, py: Python<'_>, hashes: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
        let index = self.index()?;
        let hashes: Vec<PyBackedStr> = hashes
            .try_iter()?
            .map(|item| item?.extract::<PyBackedStr>())
            .collect::<PyResult<_>>()?;
        let kind = index.kind();
        py.detach(|| count_each(&index, &hashes, |hex| parse_hash(kind, hex)))
            .map_err(Failure::into_py)
    }

    /// One lookup without opening the index: reads the header, checksums,
    /// one directory block and one page, about 2 ms cold.
    #[staticmethod]
    fn count_once(py: Python<'_>, path: PathBuf, hex: &str) -> PyResult<u64> {
        py.detach(|| Index::count_once_hex(&path, hex))
            .map_err(to_py)
    }

    /// `"sha1"` or `"ntlm"`: how passwords are hashed for this index.
    #[getter]
    fn kind(&self) -> PyResult<&'static str> {
        Ok(kind_name(self.index()?.kind()))
    }

    /// The path the index was opened from.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Distinct hashes in the index.
    fn __len__(&self) -> PyResult<usize> {
        Ok(usize::try_from(self.index()?.len()).unwrap_or(usize::MAX))
    }

    /// What the header says: version, kind, hashes, total count, pages,
    /// bucket and key bits, bytes, and the false-positive rate of a
    /// compact index (0 for a whole one).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = self.index()?.stats();
        let dict = PyDict::new(py);
        dict.set_item("version", stats.version)?;
        dict.set_item("kind", kind_name(stats.kind))?;
        dict.set_item("hashes", stats.hashes)?;
        dict.set_item("total_count", stats.total_count)?;
        dict.set_item("pages", stats.pages)?;
        dict.set_item("bucket_bits", stats.bucket_bits)?;
        dict.set_item("key_bits", stats.key_bits)?;
        dict.set_item("bytes", stats.bytes)?;
        dict.set_item("compact", stats.is_compact())?;
        dict.set_item("false_positive_rate", stats.false_positive_rate())?;
        Ok(dict)
    }

    /// Checks every page's checksum and the directory; raises
    /// `CorruptIndexError` at the first damage.
    fn verify(&self, py: Python<'_>) -> PyResult<()> {
        let index = self.index()?;
        py.detach(|| index.verify()).map_err(to_py)
    }

    /// Releases the mapping (lookups already running finish first); later
    /// calls raise `ValueError`.
    fn close(&self) {
        *self.index.write().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        _kind: &Bound<'_, PyAny>,
        _value: &Bound<'_, PyAny>,
        _traceback: &Bound<'_, PyAny>,
    ) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        let state = match self
            .index
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            Some(index) => format!("{} hashes, {}", index.len(), kind_name(index.kind())),
            None => "closed".to_string(),
        };
        format!("PwnedIndex({:?}, {state})", self.path.display().to_string())
    }
}

/// Inputs below which a batch is not worth a second thread.
const PER_THREAD: usize = 1 << 15;

/// Why a batch of lookups stopped.
enum Failure {
    /// The input at this position (0-based) is malformed, as said.
    Bad(usize, String),
    /// A lookup failed (a damaged page).
    Lookup(seekless_pwned::Error),
}

impl Failure {
    fn into_py(self) -> PyErr {
        match self {
            Failure::Bad(at, what) => PyValueError::new_err(format!("hash {at}: {what}")),
            Failure::Lookup(e) => to_py(e),
        }
    }
}

/// The key of a hash in hex of `kind` (either case), or what is wrong.
fn parse_hash(kind: Kind, hex: &str) -> Result<Key, String> {
    let shown: String = hex.chars().take(48).collect();
    let shown = if shown.len() < hex.len() {
        format!("{shown:?}…")
    } else {
        format!("{shown:?}")
    };
    let other = match kind {
        Kind::Sha1 => Kind::Ntlm,
        Kind::Ntlm => Kind::Sha1,
    };
    let a = |kind: Kind| match kind {
        Kind::Sha1 => "a SHA-1",
        Kind::Ntlm => "an NTLM",
    };
    let chars = hex.chars().count();
    if chars == other.hex_len() && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "{shown} is {chars} hex digits, {} hash; the index holds {kind} hashes ({} digits)",
            a(other),
            kind.hex_len()
        ));
    }
    if chars != kind.hex_len() {
        return Err(format!(
            "{shown} is {chars} characters long; {} hash is {} hex digits",
            a(kind),
            kind.hex_len()
        ));
    }
    Key::from_hex(kind, hex.as_bytes()).ok_or_else(|| format!("{shown} is not hexadecimal"))
}

/// The counts of `inputs`, in order, each turned into a key by `key_of`,
/// on up to every core; the first malformed input (by position) stops it.
fn count_each(
    index: &Index,
    inputs: &[PyBackedStr],
    key_of: impl Fn(&str) -> Result<Key, String> + Sync,
) -> Result<Vec<u64>, Failure> {
    let run = |first: usize, part: &[PyBackedStr]| {
        let keys = part
            .iter()
            .enumerate()
            .map(|(i, input)| key_of(input).map_err(|what| Failure::Bad(first + i, what)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut counts = Vec::with_capacity(keys.len());
        index
            .count_many(&keys, &mut counts)
            .map_err(Failure::Lookup)?;
        Ok(counts)
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(inputs.len() / PER_THREAD).max(1);
    if threads == 1 {
        return run(0, inputs);
    }
    let per = inputs.len().div_ceil(threads);
    let parts: Vec<_> = std::thread::scope(|scope| {
        let run = &run;
        let handles: Vec<_> = inputs
            .chunks(per)
            .enumerate()
            .map(|(n, part)| scope.spawn(move || run(n * per, part)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    let mut counts = Vec::with_capacity(inputs.len());
    // In order: the first failure reported is the earliest input's.
    for part in parts {
        counts.extend(part?);
    }
    Ok(counts)
}

/// A decoded bencode value as Python objects: integers as `int`, strings
/// as `bytes`, lists as `list`, dictionaries as `dict` with `bytes` keys.
fn to_python<'py>(py: Python<'py>, node: Node<'_>) -> PyResult<Bound<'py, PyAny>> {
    // Recursion is bounded: the decoder refuses nesting past its depth
    // limit (100), as libtorrent does.
    Ok(match node.kind() {
        BencodeKind::Int => node
            .as_int()
            .map_err(|e| PyValueError::new_err(e.to_string()))?
            .into_pyobject(py)?
            .into_any(),
        BencodeKind::Bytes => PyBytes::new(py, node.as_bytes().unwrap_or_default()).into_any(),
        BencodeKind::List => {
            let list = PyList::empty(py);
            for item in node.as_list().into_iter().flat_map(|l| l.iter()) {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        BencodeKind::Dict => {
            let dict = PyDict::new(py);
            for (key, value) in node.as_dict().into_iter().flat_map(|d| d.iter()) {
                dict.set_item(PyBytes::new(py, key), to_python(py, value)?)?;
            }
            dict.into_any()
        }
    })
}

/// Decodes one bencoded value, the whole of `data`, into Python objects;
/// `ValueError` saying where, for anything malformed, followed by more
/// bytes, or past the limits (integers beyond 64 bits included).
#[pyfunction]
fn bencode_decode<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let document =
        seekless_bencode::decode(data).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let root = document.root();
    let end = root.raw().len();
    if end != data.len() {
        return Err(PyValueError::new_err(format!(
            "{} bytes after the value, at byte {end}",
            data.len() - end
        )));
    }
    to_python(py, root)
}

/// A `.torrent` file's metadata (v1, v2 or hybrid) as JSON, as `seekless
/// torrent info --json` prints it; `ValueError` when it is not a valid
/// torrent.
#[pyfunction]
fn torrent_info_json(py: Python<'_>, data: &[u8]) -> PyResult<String> {
    let torrent = py
        .detach(|| seekless_bencode::torrent::Torrent::from_bytes(data))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(seekless_bencode::torrent::summary_json(&torrent))
}

#[pymodule]
fn _seekless(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PwnedIndex>()?;
    m.add_function(wrap_pyfunction!(bencode_decode, m)?)?;
    m.add_function(wrap_pyfunction!(torrent_info_json, m)?)?;
    m.add("CorruptIndexError", m.py().get_type::<CorruptIndexError>())?;
    Ok(())
}
