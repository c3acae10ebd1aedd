//! Reading an index: open once, then answer any number of lookups.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, ErrorKind, Result};
use crate::format::hash::{Key, Kind};
use crate::format::layout::{
    BLOCK_ENTRIES, CONTINUED, DIR_ENTRY, HEADER_LEN, Header, Layout, PAGE,
};
use crate::format::page::{Page, Visit};
use crate::format::source::Source;
use crate::prefetch::prefetch;

/// The bytes of an index: a memory map of its file, or a buffer.
#[derive(Debug)]
enum Data {
    /// The file is kept for dropping its cached pages (Linux).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    Map(memmap2::Mmap, File),
    Owned(Vec<u8>),
}

impl Data {
    fn bytes(&self) -> &[u8] {
        match self {
            Data::Map(map, _) => map,
            Data::Owned(vec) => vec,
        }
    }
}

/// An open index. Opening reads the header and the directory (12 bytes a
/// page) into memory; each lookup then reads one 4 KiB page.
///
/// An `Index` is `Sync`: share one between threads.
pub struct Index {
    data: Data,
    header: Header,
    /// First bucket of each page, without flags.
    firsts: Vec<u64>,
    crcs: Vec<u32>,
    /// Pages whose first bucket continues from the previous page.
    continued: Vec<u64>,
    /// Pages whose checksum has been checked.
    verified: Vec<AtomicU64>,
    /// `guide[t]`: the first page whose first bucket, shifted right by
    /// `guide_shift`, is ≥ `t`; a lookup searches only a few directory
    /// entries.
    guide: Vec<u32>,
    guide_shift: u32,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("kind", &self.kind())
            .field("hashes", &self.header.hashes)
            .field("pages", &self.header.pages)
            .finish_non_exhaustive()
    }
}

/// Figures about an index, as `seekless pwned stats` prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Format version.
    pub version: u16,
    /// Hash kind.
    pub kind: Kind,
    /// Distinct hashes.
    pub hashes: u64,
    /// Sum of all counts (saturating).
    pub total_count: u64,
    /// 4 KiB pages.
    pub pages: u64,
    /// Bucket bits.
    pub bucket_bits: u32,
    /// The top bits of each hash the index keeps: all of them (160 for
    /// SHA-1, 128 for NTLM), or fewer in a compact index.
    pub key_bits: u32,
    /// File size in bytes.
    pub bytes: u64,
    /// The index holds only the hashes seen at least this many times (a
    /// subset, `--min-count`); 1 when it holds every hash.
    pub min_count: u64,
}

impl Stats {
    /// Whether the index keeps fewer bits than its hashes have.
    pub fn is_compact(&self) -> bool {
        self.key_bits < self.kind.bits()
    }

    /// The probability that a lookup of a hash that is not in the corpus
    /// finds one that shares its kept bits: the share of all `2^key_bits`
    /// values the index holds (0 for an index of whole hashes).
    pub fn false_positive_rate(&self) -> f64 {
        if self.is_compact() {
            false_positive_rate(self.hashes, self.key_bits)
        } else {
            0.0
        }
    }
}

/// The chance that a hash outside the corpus shares its top `key_bits`
/// bits with one of `hashes` distinct values.
pub(crate) fn false_positive_rate(hashes: u64, key_bits: u32) -> f64 {
    hashes as f64 / 2f64.powi(key_bits as i32)
}

fn bit(set: &[u64], i: usize) -> bool {
    set[i / 64] & (1 << (i % 64)) != 0
}

impl Index {
    /// Opens an index file (memory-mapped, with random-access advice so a
    /// lookup reads one page).
    ///
    /// The file must not be truncated or rewritten in place while an `Index`
    /// (or anything borrowed from it) is alive: the mapping then reads
    /// changed bytes, and a page past a shrunken end raises `SIGBUS`. Replace
    /// an index by renaming a complete new file over its name, as `prepare`
    /// and `update` do; the open `Index` keeps reading the old file.
    pub fn open(path: impl AsRef<Path>) -> Result<Index> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|e| Error::io(path.to_path_buf(), e))?;
        // SAFETY: seekless writes index files once, under a temporary name,
        // and renames them into place; they are never modified in place, so
        // the mapped bytes do not change while mapped. A file changed by
        // something else could give wrong answers but every read is
        // bounds-checked.
        let map =
            unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path.to_path_buf(), e))?;
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Random);
        Index::new(Data::Map(map, file)).map_err(|e| match e.kind() {
            ErrorKind::Corrupt { what } => Error::corrupt(format!("{}: {what}", path.display())),
            _ => e,
        })
    }

    /// Opens an index from an open file (memory-mapped, as
    /// [`Index::open`]).
    pub fn from_file(file: File) -> Result<Index> {
        // SAFETY: as in `open`: index files are never modified in place.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(None, e))?;
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Random);
        Index::new(Data::Map(map, file))
    }

    /// Reads a whole index file into memory (asking for transparent huge
    /// pages on Linux). Costs the file's size in memory and a sequential
    /// read at open; lookups then avoid page faults and most TLB misses,
    /// which pays off for large batches of lookups on an index that fits
    /// in memory. [`Index::open`] maps the file instead.
    pub fn load(path: impl AsRef<Path>) -> Result<Index> {
        use std::io::Read;
        let path = path.as_ref();
        let io_err = |e| Error::io(path.to_path_buf(), e);
        let mut file = File::open(path).map_err(io_err)?;
        let len = file.metadata().map_err(io_err)?.len();
        let len = usize::try_from(len).map_err(|_| ErrorKind::TooLarge)?;
        let mut bytes: Vec<u8> = Vec::with_capacity(len);
        #[cfg(target_os = "linux")]
        if len > 0 {
            // SAFETY: the range is the vector's own allocation (capacity
            // `len`); MADV_HUGEPAGE only changes how it is backed.
            unsafe {
                libc::madvise(bytes.as_mut_ptr().cast(), len, libc::MADV_HUGEPAGE);
            }
        }
        file.read_to_end(&mut bytes).map_err(io_err)?;
        Index::new(Data::Owned(bytes)).map_err(|e| match e.kind() {
            ErrorKind::Corrupt { what } => Error::corrupt(format!("{}: {what}", path.display())),
            _ => e,
        })
    }

    /// Opens an index held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Index> {
        Index::new(Data::Owned(bytes))
    }

    fn new(data: Data) -> Result<Index> {
        let bytes = data.bytes();
        let header = Header::decode(bytes)?;
        let expected = header.file_len().ok_or(ErrorKind::TooLarge)?;
        if bytes.len() as u64 != expected {
            return Err(Error::corrupt(format!(
                "file is {} bytes, its header says {expected} (truncated or damaged)",
                bytes.len()
            )));
        }
        if bytes[header.len()..PAGE].iter().any(|&b| b != 0) {
            return Err(Error::corrupt("header block padding is not zero"));
        }
        let pages = usize::try_from(header.pages).map_err(|_| ErrorKind::TooLarge)?;
        if pages > u32::MAX as usize {
            return Err(ErrorKind::TooLarge.into());
        }
        let dir_at = PAGE * (1 + pages);
        let source_at = header.source_offset().ok_or(ErrorKind::TooLarge)? as usize;
        #[cfg(unix)]
        if let Data::Map(map, _) = &data {
            // The mapping is advised random access (a lookup reads one
            // page), which turns off read-ahead: without this, a cold open
            // would fault the directory in one 4 KiB page at a time.
            let _ = map.advise_range(memmap2::Advice::WillNeed, dir_at, source_at - dir_at);
        }
        let dir = &bytes[dir_at..dir_at + DIR_ENTRY * pages];
        if header.version < 2 {
            if crc32c::crc32c(dir) != header.dir_crc {
                return Err(Error::corrupt("directory checksum mismatch"));
            }
        } else {
            let table = &bytes[dir_at + dir.len()..source_at];
            if crc32c::crc32c(table) != header.dir_crc {
                return Err(Error::corrupt("directory checksum table mismatch"));
            }
            for (j, (block, crc)) in dir
                .chunks(BLOCK_ENTRIES * DIR_ENTRY)
                .zip(table.chunks_exact(4))
                .enumerate()
            {
                if crc32c::crc32c(block).to_le_bytes() != crc {
                    return Err(Error::corrupt(format!(
                        "directory block {j} checksum mismatch"
                    )));
                }
            }
        }
        let mut firsts = Vec::with_capacity(pages);
        let mut crcs = Vec::with_capacity(pages);
        let mut continued = vec![0u64; pages.div_ceil(64)];
        for (i, entry) in dir.chunks_exact(DIR_ENTRY).enumerate() {
            let first = u64::from_le_bytes(entry[0..8].try_into().expect("8 bytes"));
            if first & CONTINUED != 0 {
                continued[i / 64] |= 1 << (i % 64);
            }
            let first = first & !CONTINUED;
            if firsts.last().is_some_and(|&prev| prev > first) {
                return Err(Error::corrupt(format!(
                    "directory out of order at page {i}"
                )));
            }
            let limit = if header.layout.h == 64 {
                u64::MAX
            } else {
                1u64 << header.layout.h
            };
            if header.layout.h < 64 && first >= limit {
                return Err(Error::corrupt(format!(
                    "page {i} starts past the last bucket"
                )));
            }
            firsts.push(first);
            crcs.push(u32::from_le_bytes(
                entry[8..12].try_into().expect("4 bytes"),
            ));
        }
        let (guide, guide_shift) = build_guide(&firsts, header.layout.h);
        let verified = (0..pages.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        Ok(Index {
            data,
            header,
            firsts,
            crcs,
            continued,
            verified,
            guide,
            guide_shift,
        })
    }

    /// The index's header as it is in the file (64 or 72 bytes).
    #[cfg(feature = "gzip")]
    pub(crate) fn header_bytes(&self) -> &[u8] {
        &self.data.bytes()[..self.header.len()]
    }

    /// The hash kind of the index.
    pub fn kind(&self) -> Kind {
        self.header.layout.kind
    }

    /// Number of distinct hashes.
    pub fn len(&self) -> u64 {
        self.header.hashes
    }

    /// Whether the index holds no hash.
    pub fn is_empty(&self) -> bool {
        self.header.hashes == 0
    }

    /// Figures about the index.
    pub fn stats(&self) -> Stats {
        Stats {
            version: self.header.version,
            kind: self.kind(),
            hashes: self.header.hashes,
            total_count: self.header.total,
            pages: self.header.pages,
            bucket_bits: self.header.layout.h,
            key_bits: self.header.layout.key_bits,
            bytes: self.data.bytes().len() as u64,
            min_count: self.header.min_count,
        }
    }

    /// Asks the kernel to drop the index's pages from memory (the page
    /// cache and this process's mapping), keeping the directory, which is
    /// held in this process's memory: the next lookups read from storage
    /// as on a cold machine. For cold-cache measurements.
    pub fn drop_cached_pages(&self) -> Result<()> {
        #[cfg(target_os = "linux")]
        if let Data::Map(map, file) = &self.data {
            use std::os::fd::AsRawFd;
            // SAFETY: the mapping is a read-only view of a file that is not
            // modified in place; dropping its pages makes later reads fetch
            // them from the file again, with the same contents.
            unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) }
                .map_err(|e| Error::io(None, e))?;
            let len = (self.header.pages as i64) * PAGE as i64;
            // SAFETY: posix_fadvise only reads its integer arguments.
            let rc = unsafe {
                libc::posix_fadvise(
                    file.as_raw_fd(),
                    PAGE as i64,
                    len,
                    libc::POSIX_FADV_DONTNEED,
                )
            };
            if rc != 0 {
                return Err(Error::io(None, std::io::Error::from_raw_os_error(rc)));
            }
        }
        Ok(())
    }

    pub(super) fn layout(&self) -> Layout {
        self.header.layout
    }

    /// Advises the kernel that the pages are about to be read in order,
    /// once: a mapped index is otherwise advised random access, which
    /// reads one 4 KiB page a fault (10M hashes copied from a file just
    /// written past the page cache: 4.0 s against 0.6 s).
    pub(crate) fn advise_sequential(&self) {
        #[cfg(unix)]
        if let Data::Map(map, _) = &self.data {
            let _ = map.advise(memmap2::Advice::Sequential);
        }
    }

    /// The page `i`, its checksum checked the first time it is touched.
    fn page(&self, i: usize) -> Result<Page<'_>> {
        let bytes = &self.data.bytes()[PAGE * (1 + i)..PAGE * (2 + i)];
        let word = &self.verified[i / 64];
        let mask = 1u64 << (i % 64);
        if word.load(Ordering::Relaxed) & mask == 0 {
            if crc32c::crc32c(bytes) != self.crcs[i] {
                return Err(Error::corrupt(format!("page {i} checksum mismatch")));
            }
            word.fetch_or(mask, Ordering::Relaxed);
        }
        Page::with_what_follows(&self.data.bytes()[PAGE * (1 + i)..], self.layout())
            .ok_or_else(|| Error::corrupt(format!("page {i} header is inconsistent")))
    }

    /// Asks for page `i`'s cache lines (a hint).
    #[inline]
    fn prefetch_page(&self, i: usize) {
        let bytes = self.data.bytes();
        for line in (0..PAGE).step_by(64) {
            prefetch(bytes, PAGE * (1 + i) + line);
        }
    }

    /// The last page whose first bucket is ≤ `bucket`, if any.
    #[inline]
    fn locate(&self, bucket: u64) -> Option<usize> {
        let t = (bucket >> self.guide_shift) as usize;
        // At the earliest, the last page of an earlier slot.
        let lo = (self.guide[t] as usize).saturating_sub(1);
        let hi = self.guide[t + 1] as usize;
        (lo + self.firsts[lo..hi].partition_point(|&f| f <= bucket)).checked_sub(1)
    }

    /// The occurrence count of a hash (0 when absent).
    pub fn count(&self, key: Key) -> Result<u64> {
        let layout = self.layout();
        let bucket = layout.bucket(key);
        let Some(mut i) = self.locate(bucket) else {
            return Ok(0);
        };
        loop {
            let first = self.firsts[i];
            if let Some(count) = self.page(i)?.count(layout, bucket - first, key) {
                return Ok(count);
            }
            if i == 0 || !(first == bucket && bit(&self.continued, i)) {
                return Ok(0);
            }
            i -= 1;
        }
    }

    /// The counts of many hashes, appended to `counts` in order. A batch
    /// overlaps the memory reads of consecutive lookups (it asks the CPU to
    /// fetch the pages of the next lookups ahead of time), which makes it
    /// several times faster than one lookup at a time on a large index.
    pub fn count_many(&self, keys: &[Key], counts: &mut Vec<u64>) -> Result<()> {
        const AHEAD: usize = 8;
        counts.reserve(keys.len());
        for (i, &key) in keys.iter().enumerate() {
            if let Some(&next) = keys.get(i + AHEAD) {
                self.prefetch(next);
            }
            counts.push(self.count(key)?);
        }
        Ok(())
    }

    /// Asks the CPU to start fetching the first cache lines of `key`'s page
    /// (its header, count lengths and buckets).
    #[inline]
    fn prefetch(&self, key: Key) {
        #[cfg(target_arch = "x86_64")]
        if let Some(i) = self.locate(self.layout().bucket(key)) {
            for line in [0, 64, 128] {
                prefetch(self.data.bytes(), PAGE * (1 + i) + line);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }

    /// The count of a hash given as raw bytes (20 for SHA-1, 16 for NTLM).
    pub fn count_bytes(&self, hash: &[u8]) -> Result<u64> {
        if hash.len() != self.kind().bytes() {
            return Err(ErrorKind::BadHash {
                text: {
                    let mut hex = Vec::with_capacity(2 * hash.len());
                    crate::format::hash::push_hex(hash, b"0123456789abcdef", &mut hex);
                    String::from_utf8(hex).expect("hex is ASCII")
                },
                what: "wrong length for the index's hash kind",
            }
            .into());
        }
        self.count(Key::from_bytes(hash))
    }

    /// The count of a hash given in hex (either case).
    pub fn count_hex(&self, hex: &str) -> Result<u64> {
        let key = parse_hex(self.kind(), hex)?;
        self.count(key)
    }

    /// The count of a password, hashed as the index's kind.
    pub fn count_password(&self, password: &str) -> Result<u64> {
        self.count(self.kind().hash_password(password))
    }

    /// Every (hash, count) whose hash starts with the top `bits` bits of
    /// `prefix` (`prefix < 2^bits`, `bits ≤ 64`), in hash order: the HIBP
    /// range API's `/range/5BAA6` is `range(0x5BAA6, 20)`. Reads only the
    /// pages that hold the range.
    ///
    /// A compact index (one that keeps only the top bits of each hash)
    /// cannot tell its hashes whole: it answers [`ErrorKind::Compact`].
    pub fn range(&self, prefix: u64, bits: u32) -> Result<Vec<(Key, u64)>> {
        let mut out = Vec::new();
        self.range_into(prefix, bits, &mut out)?;
        Ok(out)
    }

    /// [`Index::range`] appended to `out`, whose memory a caller reuses
    /// from one range to the next; on error `out` is left as it was.
    pub fn range_into(&self, prefix: u64, bits: u32, out: &mut Vec<(Key, u64)>) -> Result<()> {
        let start = out.len();
        let done = self.visit_range(prefix, bits, |key, count| out.push((key, count)));
        if done.is_err() {
            out.truncate(start);
        }
        done
    }

    /// Calls `f` with every (hash, count) whose top `bits` bits are
    /// `prefix`, in hash order, decoding only the pages that hold them.
    pub(super) fn visit_range(&self, prefix: u64, bits: u32, f: impl Visit) -> Result<()> {
        let layout = self.layout();
        self.visit_range_by(prefix, bits, f, |page, first, window, within| {
            page.visit_within(layout, first, window, within)
        })
    }

    /// [`Index::visit_range`], each page decoded by `visit` (as
    /// [`Page::visit_within`] does) into the `f` it is given.
    pub(super) fn visit_range_by<F: Visit>(
        &self,
        prefix: u64,
        bits: u32,
        mut f: F,
        mut visit: impl FnMut(
            Page<'_>,
            u64,
            std::ops::RangeInclusive<u64>,
            InRange<'_, F>,
        ) -> Option<()>,
    ) -> Result<()> {
        let bits = bits.min(64);
        // When a bucket is wider than the range (a small index), its other
        // hashes are passed over by their top bits.
        let (shift, bits_mask) = if bits == 0 {
            (0, 0)
        } else {
            (64 - bits, u64::MAX)
        };
        self.range_pages(prefix, bits, |page, first, window| {
            // Hashes of other buckets are checked, not passed on.
            let within = InRange {
                prefix,
                shift,
                bits_mask,
                f: &mut f,
            };
            visit(page, first, window, within)
        })
    }

    /// Calls `each` with every page that holds hashes whose top `bits`
    /// bits (at most 64) are `prefix`, in order, with the page's first
    /// bucket and the buckets that hold them; an error when `each` finds a
    /// page inconsistent (`None`).
    pub(super) fn range_pages(
        &self,
        prefix: u64,
        bits: u32,
        mut each: impl FnMut(Page<'_>, u64, std::ops::RangeInclusive<u64>) -> Option<()>,
    ) -> Result<()> {
        let layout = self.layout();
        if layout.is_compact() {
            return Err(ErrorKind::Compact {
                key_bits: layout.key_bits,
            }
            .into());
        }
        if bits < 64 && prefix >> bits != 0 {
            return Ok(());
        }
        let h = layout.h;
        let (first, last) = if bits <= h {
            let span = h - bits;
            let first = if span == 64 { 0 } else { prefix << span };
            let last = if span == 0 {
                first
            } else {
                first | ((1u64 << span) - 1)
            };
            (first, last)
        } else {
            let b = prefix >> (bits - h);
            (b, b)
        };
        let mut i = self.locate(first).unwrap_or(0);
        while i > 0 && self.firsts[i] == first && bit(&self.continued, i) {
            i -= 1;
        }
        let holds = |i: usize| i < self.firsts.len() && self.firsts[i] <= last;
        // A page's sections are read side by side, four streams that the
        // processor's prefetcher learns anew in each 4 KiB page: the whole
        // page is asked for first, and the next one while this is decoded.
        if holds(i) {
            self.prefetch_page(i);
        }
        while holds(i) {
            if holds(i + 1) {
                self.prefetch_page(i + 1);
            }
            each(self.page(i)?, self.firsts[i], first..=last)
                .ok_or_else(|| Error::corrupt(format!("page {i} does not decode")))?;
            i += 1;
        }
        Ok(())
    }

    /// Every (hash, count) in hash order. A compact index gives each hash
    /// as the bits it keeps, the rest zero.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            index: self,
            page: 0,
            buf: Vec::new(),
            pos: 0,
        }
    }

    /// Where the hashes came from, when the index was made by an update
    /// from the range API (format version 3): the base URL, the time of the
    /// last update, each range's validator. The section is checksummed and
    /// read only when asked for.
    pub fn source(&self) -> Result<Option<Source>> {
        if self.header.source_len == 0 {
            return Ok(None);
        }
        let bytes = self.data.bytes();
        let at = self.header.source_offset().ok_or(ErrorKind::TooLarge)? as usize;
        let section = &bytes[at..];
        if crc32c::crc32c(section) != self.header.source_crc {
            return Err(Error::corrupt("source section checksum mismatch"));
        }
        Source::decode(section).map(Some)
    }

    /// Checks every checksum, the order of every hash, that no count is
    /// below the index's minimum, and the header's totals.
    pub fn verify(&self) -> Result<()> {
        self.source()?;
        let mut hashes = 0u64;
        let mut total = 0u64;
        let mut prev: Option<Key> = None;
        for item in self.iter() {
            let (key, count) = item?;
            if prev.is_some_and(|p| p >= key) {
                return Err(Error::corrupt(format!(
                    "hash {} out of order",
                    key.to_hex(self.kind())
                )));
            }
            if count < self.header.min_count {
                return Err(Error::corrupt(format!(
                    "hash {} has a count of {count}, below the index's minimum of {}",
                    key.to_hex(self.kind()),
                    self.header.min_count
                )));
            }
            prev = Some(key);
            hashes += 1;
            total = total.saturating_add(count);
        }
        if hashes != self.header.hashes {
            return Err(Error::corrupt(format!(
                "holds {hashes} hashes, its header says {}",
                self.header.hashes
            )));
        }
        if total != self.header.total {
            return Err(Error::corrupt(format!(
                "counts add up to {total}, its header says {}",
                self.header.total
            )));
        }
        Ok(())
    }
}

/// Parses a hex hash of `kind`, with a clear error.
pub(crate) fn parse_hex(kind: Kind, hex: &str) -> Result<Key> {
    let bad = |what| -> Error {
        ErrorKind::BadHash {
            text: hex.to_string(),
            what,
        }
        .into()
    };
    if hex.len() != kind.hex_len() {
        return Err(bad(match kind {
            Kind::Sha1 => "a SHA-1 hash has 40 hex digits",
            Kind::Ntlm => "an NTLM hash has 32 hex digits",
        }));
    }
    Key::from_hex(kind, hex.as_bytes()).ok_or_else(|| bad("not hexadecimal"))
}

fn build_guide(firsts: &[u64], h: u32) -> (Vec<u32>, u32) {
    // At least one bit when there are bucket bits, so the shift stays below 64.
    let bits = (usize::BITS - firsts.len().leading_zeros())
        .min(h)
        .min(28)
        .max(h.min(1));
    let shift = h - bits;
    let slots = 1usize << bits;
    let mut guide = Vec::with_capacity(slots + 1);
    let mut page = 0usize;
    for t in 0..=slots as u64 {
        while page < firsts.len() && (firsts[page] >> shift) < t {
            page += 1;
        }
        guide.push(page as u32);
    }
    (guide, shift)
}

/// The hashes of a range (`prefix`, its top bits) passed on to `f`; the
/// others of a bucket wider than the range are dropped.
pub(super) struct InRange<'f, F> {
    prefix: u64,
    shift: u32,
    bits_mask: u64,
    f: &'f mut F,
}

impl<F: Visit> Visit for InRange<'_, F> {
    #[inline(always)]
    fn pair(&mut self, key: Key, count: u64) {
        if (key.hi >> self.shift) & self.bits_mask == self.prefix {
            self.f.pair(key, count);
        }
    }
}

/// Iterator over an index's (hash, count) pairs in hash order.
#[derive(Debug)]
pub struct Iter<'a> {
    index: &'a Index,
    page: usize,
    buf: Vec<(Key, u64)>,
    pos: usize,
}

impl Iterator for Iter<'_> {
    type Item = Result<(Key, u64)>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.pos == self.buf.len() {
            if self.page == self.index.firsts.len() {
                return None;
            }
            let i = self.page;
            self.page += 1;
            self.buf.clear();
            self.pos = 0;
            let layout = self.index.layout();
            let decoded = self
                .index
                .page(i)
                .and_then(|page| {
                    page.decode(layout, self.index.firsts[i], &mut self.buf)
                        .ok_or_else(|| Error::corrupt(format!("page {i} does not decode")))
                })
                .and_then(|()| {
                    let next = self.index.firsts.get(i + 1).copied();
                    let first = self.index.firsts[i];
                    let ok = self.buf.iter().all(|&(k, _)| {
                        let b = layout.bucket(k);
                        b >= first && next.is_none_or(|n| b <= n)
                    });
                    if ok {
                        Ok(())
                    } else {
                        Err(Error::corrupt(format!(
                            "page {i} holds hashes of another page"
                        )))
                    }
                });
            if let Err(e) = decoded {
                self.page = self.index.firsts.len();
                self.buf.clear();
                return Some(Err(e));
            }
        }
        let item = self.buf[self.pos];
        self.pos += 1;
        Some(Ok(item))
    }
}

const _: () = assert!(HEADER_LEN <= PAGE);
