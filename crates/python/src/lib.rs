//! Python bindings: `seekless.PwnedIndex` (the pwned engine), an index
//! opened once (memory-mapped) and shared by every thread, answering each
//! password with one page read, and `seekless.build_index`, which builds
//! one; bencode decoding and torrent metadata (the bencode engine); and
//! Bitcoin Core's block files (`blocks.rs`, the blocks engine).
//! The Python package (`python/seekless`) re-exports these and adds the
//! Django validator.

mod blocks;

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyException, PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use seekless_bencode::{Kind as BencodeKind, Node};
use seekless_pwned::{BuildOptions, ErrorKind, Index, Input, Key, Kind, NoProgress};

pyo3::create_exception!(
    seekless,
    CorruptIndexError,
    PyException,
    "The file is not a seekless index, or it is damaged."
);

/// A pwned error as the Python exception a caller expects: a missing file
/// is `FileNotFoundError`, other I/O `OSError`, a malformed hash, input
/// line or build option `ValueError`, a file that is not a sound index
/// `CorruptIndexError`.
fn to_py(e: seekless_pwned::Error) -> PyErr {
    let message = e.to_string();
    match e.kind() {
        ErrorKind::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(message)
        }
        ErrorKind::Io { .. } => PyOSError::new_err(message),
        ErrorKind::BadHash { .. }
        | ErrorKind::WrongKind { .. }
        | ErrorKind::BadLine { .. }
        | ErrorKind::MixedKinds { .. }
        | ErrorKind::KeyBits { .. }
        | ErrorKind::MinCount { .. } => PyValueError::new_err(message),
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

/// The inputs of `build_index`: one path or `bytes`, or an iterable of
/// them.
fn inputs_of(inputs: &Bound<'_, PyAny>) -> PyResult<Vec<Input>> {
    let one = |item: &Bound<'_, PyAny>, n: usize| -> PyResult<Input> {
        match item.cast::<PyBytes>() {
            Ok(bytes) => Ok(Input::Bytes {
                name: format!("<bytes {n}>"),
                data: bytes.as_bytes().to_vec(),
            }),
            Err(_) => item.extract::<PathBuf>().map(Input::Path),
        }
    };
    let single = inputs.is_instance_of::<PyBytes>()
        || inputs.is_instance_of::<PyString>()
        || inputs.hasattr("__fspath__")?;
    if single {
        return Ok(vec![one(inputs, 0)?]);
    }
    inputs
        .try_iter()?
        .enumerate()
        .map(|(n, item)| one(&item?, n))
        .collect()
}

/// Builds an index at `output` from `HASH:COUNT` text, as `seekless pwned
/// prepare` does, with the GIL released (it runs to its end: Ctrl-C is
/// seen once it returns), and returns what the build did.
///
/// `inputs`: a path (a text or gzip file of `HASH:COUNT` lines, or a
/// directory of per-range files `00000.txt` … `FFFFF.txt`) or `bytes`
/// holding such lines, or an iterable of them. `key_bits`: a compact
/// index, keeping the top N bits of each hash (32 to 159 for SHA-1, to
/// 127 for NTLM). `min_count`: keep only the hashes seen at least N
/// times. `skip_invalid`: count and skip malformed lines instead of
/// raising `ValueError`. `threads`: parser and sorter threads (default:
/// all cores). `memory`: bytes of records held before spilling to
/// `tmp_dir` (default: half the machine's memory, at most 4 GiB; spill
/// files go beside `output` unless `tmp_dir` is given). The index is
/// written under no name and given `output` only once complete.
#[pyfunction]
#[pyo3(signature = (inputs, output, *, key_bits=None, min_count=1, skip_invalid=false,
                    threads=None, memory=None, tmp_dir=None))]
#[allow(clippy::too_many_arguments)]
fn build_index<'py>(
    py: Python<'py>,
    inputs: &Bound<'py, PyAny>,
    output: PathBuf,
    key_bits: Option<u32>,
    min_count: u64,
    skip_invalid: bool,
    threads: Option<usize>,
    memory: Option<u64>,
    tmp_dir: Option<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    if min_count == 0 {
        return Err(PyValueError::new_err("min_count must be at least 1"));
    }
    let inputs = inputs_of(inputs)?;
    let mut options = BuildOptions::default();
    options.threads = threads.map_or(options.threads, |t| t.max(1));
    options.memory = memory.unwrap_or(options.memory);
    options.tmp_dir = tmp_dir;
    options.skip_invalid = skip_invalid;
    options.key_bits = key_bits;
    options.min_count = min_count;
    let summary = py
        .detach(|| seekless_pwned::build(inputs, &output, &options, &NoProgress))
        .map_err(to_py)?;
    let dict = PyDict::new(py);
    dict.set_item("kind", kind_name(summary.kind.unwrap_or(Kind::Sha1)))?;
    dict.set_item("lines", summary.lines)?;
    dict.set_item("hashes", summary.hashes)?;
    dict.set_item("duplicates", summary.duplicates)?;
    dict.set_item("invalid", summary.invalid)?;
    dict.set_item("first_invalid", summary.first_invalid.as_deref())?;
    dict.set_item("zero_counts", summary.zero_counts)?;
    dict.set_item("capped", summary.capped)?;
    dict.set_item("bytes", summary.bytes)?;
    dict.set_item("spilled", summary.spilled)?;
    dict.set_item("key_bits", summary.key_bits)?;
    dict.set_item("min_count", summary.min_count)?;
    dict.set_item("left_out", summary.left_out)?;
    dict.set_item("streamed", summary.streamed)?;
    dict.set_item("seconds", summary.seconds)?;
    dict.set_item("false_positive_rate", summary.false_positive_rate())?;
    Ok(dict)
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

/// The bytes `bencode_decode` and `torrent_info_json` read: a `bytes`
/// object's own, or the memory of any other object that exports a
/// C-contiguous buffer (`bytearray`, `memoryview`, `mmap`, `array`, …),
/// read in place, as `bytes(data)` would see it, without a copy.
enum Data<'py> {
    /// Immutable: may be read with the GIL released.
    Bytes(Bound<'py, PyBytes>),
    /// Possibly mutable (a `bytearray`, a writable `mmap`): read only with
    /// the GIL held throughout and no Python code run meanwhile.
    Buffer(PyUntypedBuffer),
}

impl<'py> Data<'py> {
    fn of(data: &Bound<'py, PyAny>) -> PyResult<Data<'py>> {
        if let Ok(bytes) = data.cast::<PyBytes>() {
            return Ok(Data::Bytes(bytes.clone()));
        }
        // A TypeError for an object that exports no buffer.
        let buffer = PyUntypedBuffer::get(data)?;
        if !buffer.is_c_contiguous() {
            buffer.release(data.py());
            return Err(PyValueError::new_err(
                "the buffer is not contiguous (a strided memoryview?): pass bytes(data)",
            ));
        }
        Ok(Data::Buffer(buffer))
    }

    /// Runs `f` on the bytes. The GIL stays held for the whole call: `f`
    /// must not run Python code (see `GcPaused` for what else could).
    fn with<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            Data::Bytes(bytes) => f(bytes.as_bytes()),
            Data::Buffer(buffer) => {
                let len = buffer.len_bytes();
                if len == 0 {
                    return f(&[]);
                }
                // SAFETY: the buffer is C-contiguous, so its `len_bytes`
                // bytes start at `buf_ptr` (non-null for a non-empty
                // export), and the export keeps that memory allocated and
                // its size fixed until released (a `bytearray` or `mmap`
                // refuses to resize or close while exported), which happens
                // after `f` returns. Nothing writes to it meanwhile: the
                // caller holds the GIL throughout and runs no Python code,
                // so no Python code in this process can. (Native code
                // writing without the GIL, or another process writing a
                // shared file mapping, would break any reader of the
                // buffer; as for index files, that is the caller's to
                // prevent.)
                let bytes =
                    unsafe { std::slice::from_raw_parts(buffer.buf_ptr().cast::<u8>(), len) };
                f(bytes)
            }
        }
    }

    fn release(self, py: Python<'_>) {
        if let Data::Buffer(buffer) = self {
            buffer.release(py);
        }
    }
}

/// The cyclic garbage collector paused while it lives (if it was enabled).
///
/// Building Python objects allocates, and an allocation may start a
/// collection (before Python 3.12 right there), which runs finalizers:
/// Python code, which could write to the buffer being decoded. Paused, it
/// runs nothing; the objects made meanwhile are collected at the next
/// allocation after it resumes, as they would have been.
struct GcPaused {
    was_enabled: bool,
}

impl GcPaused {
    fn new(_py: Python<'_>) -> GcPaused {
        // SAFETY: the GIL is held (`_py`).
        let was_enabled = unsafe { pyo3::ffi::PyGC_Disable() } == 1;
        GcPaused { was_enabled }
    }
}

impl Drop for GcPaused {
    fn drop(&mut self) {
        if self.was_enabled {
            // SAFETY: made with the GIL held, and dropped in the same
            // GIL-holding scope (the guard is not `Send`).
            unsafe { pyo3::ffi::PyGC_Enable() };
        }
    }
}

/// Decodes one bencoded value, the whole of `data`, into Python objects;
/// `ValueError` saying where, for anything malformed, followed by more
/// bytes, or past the limits (integers beyond 64 bits included).
fn decode_bencode<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
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

/// Decodes one bencoded value, the whole of `data` (`bytes` or any object
/// exporting a C-contiguous buffer, read in place), into Python objects;
/// `ValueError` saying where, for anything malformed, followed by more
/// bytes, or past the limits (integers beyond 64 bits included).
#[pyfunction]
fn bencode_decode<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let data = Data::of(data)?;
    let decoded = match &data {
        Data::Bytes(_) => data.with(|bytes| decode_bencode(py, bytes)),
        Data::Buffer(_) => {
            let _paused = GcPaused::new(py);
            data.with(|bytes| decode_bencode(py, bytes))
        }
    };
    data.release(py);
    decoded
}

/// A `.torrent` file's metadata (v1, v2 or hybrid) as JSON, as `seekless
/// torrent info --json` prints it; `ValueError` when it is not a valid
/// torrent. `bytes` are read with the GIL released; another buffer is read
/// in place with it held (pure Rust: no Python code runs meanwhile).
#[pyfunction]
fn torrent_info_json(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<String> {
    let data = Data::of(data)?;
    let parse = |bytes: &[u8]| seekless_bencode::torrent::Torrent::from_bytes(bytes);
    let torrent = match &data {
        Data::Bytes(bytes) => {
            let bytes = bytes.as_bytes();
            py.detach(|| parse(bytes))
        }
        Data::Buffer(_) => data.with(parse),
    };
    data.release(py);
    let torrent = torrent.map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(seekless_bencode::torrent::summary_json(&torrent))
}

#[pymodule]
fn _seekless(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<PwnedIndex>()?;
    m.add_function(wrap_pyfunction!(build_index, m)?)?;
    m.add_function(wrap_pyfunction!(bencode_decode, m)?)?;
    m.add_function(wrap_pyfunction!(torrent_info_json, m)?)?;
    m.add("CorruptIndexError", m.py().get_type::<CorruptIndexError>())?;
    blocks::register(m)?;
    Ok(())
}
