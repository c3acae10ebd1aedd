//! The streaming build: hashes that arrive in hash order go straight into
//! pages, with no partition, sort or spill, in memory bounded whatever the
//! corpus size (the directory, 12 bytes a page, is all that grows). The
//! range-API update uses it; so can any input known to be sorted.

use std::io::{Seek, Write};

use crate::error::{Error, ErrorKind, Result};
use crate::format::hash::{Key, Kind};
#[cfg(any(test, feature = "update", feature = "test-util"))]
use crate::format::layout::DIR_ENTRY;
use crate::format::layout::{CONTINUED, Layout, MIN_KEY_BITS, PAGE};
#[cfg(any(test, feature = "update", feature = "test-util"))]
use crate::format::page::DirEntryBytes;
use crate::format::page::{DirEntry, Encoder, Merged, page_bytes};
use crate::format::source::Source;
use crate::write::trailer::write_trailer;

/// Hashes held back to estimate the corpus size (and so the bucket bits)
/// from how far into the hash space they reach, when the size is not given.
const ESTIMATE_AFTER: usize = 1 << 18;

/// Writes an index from (hash, count) pairs given in increasing hash order.
///
/// ```
/// use seekless_pwned::test_util::SortedWriter;
/// use seekless_pwned::{Index, Kind};
/// let mut writer = SortedWriter::new(std::io::Cursor::new(Vec::new()), Kind::Sha1, None)?;
/// writer.push(Kind::Sha1.hash_password("hunter2"), 3)?;
/// let (out, written) = writer.finish(None)?;
/// assert_eq!(written.hashes, 1);
/// let index = Index::from_bytes(out.into_inner())?;
/// assert_eq!(index.count_password("hunter2")?, 3);
/// # Ok::<(), seekless_pwned::Error>(())
/// ```
#[derive(Debug)]
pub struct SortedWriter<W: Write + Seek> {
    out: W,
    kind: Kind,
    /// The top bits of each hash that are kept.
    key_bits: u32,
    /// Hashes whose summed count is below this are left out.
    min_count: u64,
    /// Pairs held until the layout is chosen.
    held: Vec<(Key, u64)>,
    encoder: Option<Encoder>,
    last: Option<(Key, u64)>,
    written: Written,
    dir: Vec<DirEntry>,
    #[cfg(any(test, feature = "update", feature = "test-util"))]
    /// Directory entries already handed out by a checkpoint.
    checkpointed: usize,
}

#[cfg(any(test, feature = "update", feature = "test-util"))]
/// A point a [`SortedWriter`] can resume from (see
/// [`SortedWriter::checkpoint`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The layout's bucket bits.
    pub bucket_bits: u32,
    /// The top bits of each hash that are kept.
    pub key_bits: u32,
    /// The bucket of the last hash written, if any (a page that starts in
    /// it continues it).
    pub last_bucket: Option<u64>,
    /// Directory entries (12 bytes each) added since the previous checkpoint.
    pub dir: Vec<u8>,
    /// Pages written in all, after the header block.
    pub pages: u64,
    /// Totals so far.
    pub written: Written,
}

/// What a [`SortedWriter`] wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    /// Distinct hashes.
    pub hashes: u64,
    /// Sum of the counts (saturating).
    pub total: u64,
    /// Equal hashes given one after the other, merged (counts summed).
    pub duplicates: u64,
    /// 4 KiB pages.
    pub pages: u64,
    /// Bytes of the whole file.
    pub bytes: u64,
}

impl<W: Write + Seek> SortedWriter<W> {
    #[cfg(any(test, feature = "update", feature = "test-util"))]
    /// Starts an index of `kind` at the current start of `out`. `expected`,
    /// the number of hashes when known, chooses the layout at once;
    /// otherwise the first hashes are held back to estimate it.
    pub fn new(out: W, kind: Kind, expected: Option<u64>) -> Result<SortedWriter<W>> {
        SortedWriter::compact(out, kind, kind.bits(), expected)
    }

    /// Starts a compact index that keeps only the top `key_bits` bits of
    /// each hash ([`MIN_KEY_BITS`] up to the kind's
    /// bits): hashes that share them are merged, their counts summed, and a
    /// lookup of any hash that shares them answers with that sum.
    pub fn compact(
        out: W,
        kind: Kind,
        key_bits: u32,
        expected: Option<u64>,
    ) -> Result<SortedWriter<W>> {
        check_key_bits(kind, key_bits)?;
        let encoder = expected.map(|n| Encoder::new(Layout::compact(kind, n, key_bits)));
        SortedWriter::start(out, kind, key_bits, encoder)
    }

    /// Starts an index with the given layout.
    pub(crate) fn with_layout(out: W, layout: Layout) -> Result<SortedWriter<W>> {
        SortedWriter::start(
            out,
            layout.kind,
            layout.key_bits,
            Some(Encoder::new(layout)),
        )
    }

    fn start(
        mut out: W,
        kind: Kind,
        key_bits: u32,
        encoder: Option<Encoder>,
    ) -> Result<SortedWriter<W>> {
        out.write_all(&[0u8; PAGE])
            .map_err(|e| Error::io(None, e))?;
        Ok(SortedWriter::at(
            out,
            kind,
            key_bits,
            encoder,
            Written::default(),
            Vec::new(),
        ))
    }

    /// A writer whose `out` already holds the header block and the pages
    /// `written` and `dir` describe.
    fn at(
        out: W,
        kind: Kind,
        key_bits: u32,
        encoder: Option<Encoder>,
        written: Written,
        dir: Vec<DirEntry>,
    ) -> SortedWriter<W> {
        SortedWriter {
            out,
            kind,
            key_bits,
            min_count: 1,
            held: Vec::new(),
            encoder,
            last: None,
            written,
            #[cfg(any(test, feature = "update", feature = "test-util"))]
            checkpointed: dir.len(),
            dir,
        }
    }

    /// Keeps only the hashes whose count, summed over equal hashes given
    /// one after the other, is at least `min_count`: a subset of the
    /// corpus, which the index records (format version 5). 1, the
    /// default, keeps every hash. A writer resumed from a checkpoint is
    /// given its minimum again.
    pub fn with_min_count(mut self, min_count: u64) -> SortedWriter<W> {
        self.min_count = min_count.max(1);
        self
    }

    /// Adds pages packed elsewhere with this writer's layout, whose hashes
    /// all come after those given so far (the caller makes sure; `last` is
    /// the last of them): the page being filled is closed, and the first
    /// new page flagged as continuing its bucket if it does.
    pub(crate) fn append(
        &mut self,
        pages: &[u8],
        dir: &[DirEntry],
        merged: Merged,
        last: Key,
    ) -> Result<()> {
        debug_assert_eq!(self.min_count, 1, "packed pages are not filtered");
        if let Some((key, count)) = self.last.take() {
            self.emit(key, count)?;
        }
        let encoder = self.encoder.as_mut().expect("a layout given");
        encoder.close_page();
        let closed = encoder.closed_in();
        encoder.after_closed(Some(encoder.layout().bucket(last)));
        self.drain()?;
        self.out.write_all(pages).map_err(|e| Error::io(None, e))?;
        for (i, &entry) in dir.iter().enumerate() {
            let continued = i == 0 && closed == Some(entry.first & !CONTINUED);
            self.dir.push(DirEntry {
                first: entry.first | if continued { CONTINUED } else { 0 },
                crc: entry.crc,
            });
        }
        self.written.hashes += merged.hashes;
        self.written.duplicates += merged.duplicates;
        self.written.total = self.written.total.saturating_add(merged.total);
        Ok(())
    }

    /// The top bits of each hash that are kept.
    pub(crate) fn key_bits(&self) -> u32 {
        self.key_bits
    }

    #[cfg(any(test, feature = "test-util"))]
    /// The kind of hashes this writer takes.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    #[cfg(any(test, feature = "update", feature = "test-util"))]
    /// The last hash given, if any.
    pub fn last(&self) -> Option<Key> {
        self.last.map(|(key, _)| key)
    }

    /// Adds a hash with its count (counts of 0 are skipped). Hashes must not
    /// decrease; an equal one is merged with the one before.
    pub fn push(&mut self, key: Key, count: u64) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let key = key.truncated(self.key_bits);
        match self.last {
            Some((last, sum)) if key == last => {
                self.last = Some((key, sum.saturating_add(count)));
                self.written.duplicates += 1;
                return Ok(());
            }
            Some((last, _)) if key < last => {
                return Err(ErrorKind::Unsorted {
                    previous: last.to_hex(self.kind),
                    next: key.to_hex(self.kind),
                }
                .into());
            }
            Some((last, sum)) => self.emit(last, sum)?,
            None => {}
        }
        self.last = Some((key, count));
        Ok(())
    }

    fn emit(&mut self, key: Key, count: u64) -> Result<()> {
        if count < self.min_count {
            return Ok(());
        }
        self.written.hashes += 1;
        self.written.total = self.written.total.saturating_add(count);
        match &mut self.encoder {
            Some(encoder) => {
                encoder.push(key, count);
                if encoder.pages.len() >= 64 {
                    self.drain()?;
                }
            }
            None => {
                self.held.push((key, count));
                if self.held.len() >= ESTIMATE_AFTER {
                    self.choose_layout(None)?;
                }
            }
        }
        Ok(())
    }

    /// Chooses the layout from the held hashes (all of them when `exact`),
    /// then encodes them.
    fn choose_layout(&mut self, exact: Option<u64>) -> Result<()> {
        let n = exact.unwrap_or_else(|| {
            // Uniform hashes: the share of the hash space the held ones
            // cover is the share of the corpus they are.
            let reach = self.held.last().map_or(1.0, |(k, _)| k.hi as f64 + 1.0);
            let share = reach / 2f64.powi(64);
            (self.held.len() as f64 / share).min(u64::MAX as f64) as u64
        });
        let mut encoder = Encoder::new(Layout::compact(self.kind, n, self.key_bits));
        for (key, count) in self.held.drain(..) {
            encoder.push(key, count);
        }
        self.held = Vec::new();
        self.encoder = Some(encoder);
        self.drain()
    }

    /// Writes out the pages encoded so far.
    fn drain(&mut self) -> Result<()> {
        let encoder = self.encoder.as_mut().expect("layout chosen");
        self.out
            .write_all(page_bytes(&encoder.pages))
            .map_err(|e| Error::io(None, e))?;
        encoder.pages.clear();
        self.dir.append(&mut encoder.dir);
        Ok(())
    }

    #[cfg(any(test, feature = "update", feature = "test-util"))]
    /// Makes everything pushed so far durable in `out`'s pages (the last
    /// page closed partly filled, the layout chosen if it was not), and
    /// returns what [`SortedWriter::resume`] needs to go on from here in
    /// another process: the layout's bucket bits, the directory entries
    /// added since the previous checkpoint, and the totals. `out` is flushed
    /// but not synced.
    pub fn checkpoint(&mut self) -> Result<Checkpoint> {
        if let Some((key, count)) = self.last.take() {
            self.emit(key, count)?;
        }
        if self.encoder.is_none() {
            self.choose_layout(None)?;
        }
        let encoder = self.encoder.as_mut().expect("layout chosen");
        encoder.close_page();
        let bucket_bits = encoder.layout().h;
        let key_bits = encoder.layout().key_bits;
        let last_bucket = encoder.closed_in();
        self.drain()?;
        self.out.flush().map_err(|e| Error::io(None, e))?;
        let new = &self.dir[self.checkpointed..];
        let checkpoint = Checkpoint {
            bucket_bits,
            key_bits,
            last_bucket,
            dir: new.iter().flat_map(|e| DirEntryBytes::from(*e).0).collect(),
            pages: self.dir.len() as u64,
            written: self.written,
        };
        self.checkpointed = self.dir.len();
        Ok(checkpoint)
    }

    #[cfg(any(test, feature = "update", feature = "test-util"))]
    /// Goes on from a sequence of checkpoints: `out` holds the header block
    /// and the pages they describe, and is positioned after them; `dir` is
    /// the concatenation of their directory entries.
    pub fn resume(out: W, kind: Kind, last: &Checkpoint, dir: &[u8]) -> Result<SortedWriter<W>> {
        let (bucket_bits, key_bits) = (last.bucket_bits, last.key_bits);
        check_key_bits(kind, key_bits)?;
        if bucket_bits > key_bits.min(64)
            || !dir.len().is_multiple_of(DIR_ENTRY)
            || (dir.len() / DIR_ENTRY) as u64 != last.pages
        {
            return Err(Error::corrupt("checkpoint does not describe an index"));
        }
        let dir: Vec<DirEntry> = dir
            .chunks_exact(DIR_ENTRY)
            .map(|b| DirEntryBytes(b.try_into().expect("12 bytes")).into())
            .collect();
        let mut encoder = Encoder::new(Layout {
            kind,
            h: bucket_bits,
            key_bits,
        });
        encoder.after_closed(last.last_bucket);
        Ok(SortedWriter::at(
            out,
            kind,
            key_bits,
            Some(encoder),
            last.written,
            dir,
        ))
    }

    #[cfg(any(test, feature = "test-util"))]
    /// The output being written.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Writes the last page, the directory, the source section (if any) and
    /// the header; returns `out` and what was written.
    pub fn finish(mut self, source: Option<&Source>) -> Result<(W, Written)> {
        if let Some((key, count)) = self.last.take() {
            self.emit(key, count)?;
        }
        if self.encoder.is_none() {
            self.choose_layout(Some(self.held.len() as u64))?;
        }
        let encoder = self.encoder.as_mut().expect("layout chosen");
        encoder.flush();
        let layout = encoder.layout();
        self.drain()?;
        let header = write_trailer(
            &mut self.out,
            layout,
            &self.dir,
            (self.written.hashes, self.written.total),
            self.min_count,
            source,
        )?;
        self.written.pages = header.pages;
        self.written.bytes = header.file_len().unwrap_or(0);
        Ok((self.out, self.written))
    }
}

/// Refuses to keep fewer than [`MIN_KEY_BITS`] bits of a hash, or more
/// than it has.
pub(crate) fn check_key_bits(kind: Kind, key_bits: u32) -> Result<()> {
    if (MIN_KEY_BITS..=kind.bits()).contains(&key_bits) {
        Ok(())
    } else {
        Err(ErrorKind::KeyBits {
            key_bits,
            kind,
            min: MIN_KEY_BITS,
        }
        .into())
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, SeekFrom};

    use super::*;
    use crate::format::layout::{Header, VERSION_WHOLE};
    use crate::read::index::Index;

    fn keys(n: usize, seed: u64) -> Vec<(Key, u64)> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let mut v: Vec<(Key, u64)> = (0..n)
            .map(|_| {
                let key = Key {
                    hi: next(),
                    mid: next(),
                    lo: next() as u32,
                };
                (key, 1 + next() % 1000)
            })
            .collect();
        v.sort();
        v
    }

    fn write(pairs: &[(Key, u64)], expected: Option<u64>, source: Option<&Source>) -> Index {
        let mut w = SortedWriter::new(Cursor::new(Vec::new()), Kind::Sha1, expected).unwrap();
        for &(k, c) in pairs {
            w.push(k, c).unwrap();
        }
        let (out, written) = w.finish(source).unwrap();
        let index = Index::from_bytes(out.into_inner()).unwrap();
        assert_eq!(written.hashes, index.len());
        assert_eq!(written.bytes, index.stats().bytes);
        index
    }

    #[test]
    fn streams_sorted_pairs_into_an_index() {
        for n in [0, 1, 2, 1000, ESTIMATE_AFTER + 5000] {
            let pairs = keys(n, n as u64);
            for expected in [None, Some(n as u64)] {
                let index = write(&pairs, expected, None);
                index.verify().unwrap();
                let back: Vec<(Key, u64)> = index.iter().map(Result::unwrap).collect();
                assert_eq!(back, pairs, "n = {n}, expected {expected:?}");
                assert_eq!(index.source().unwrap(), None);
                // The estimate finds the layout the exact count gives.
                assert_eq!(
                    index.stats().bucket_bits,
                    Layout::for_count(Kind::Sha1, n as u64).h,
                    "n = {n}"
                );
            }
        }
    }

    #[test]
    fn equal_hashes_merge_and_zero_counts_are_skipped() {
        let pairs = keys(100, 7);
        let mut w = SortedWriter::new(Cursor::new(Vec::new()), Kind::Sha1, None).unwrap();
        for &(k, c) in &pairs {
            w.push(k, c).unwrap();
            w.push(k, 0).unwrap();
            w.push(k, u64::MAX).unwrap();
        }
        let (out, written) = w.finish(None).unwrap();
        assert_eq!((written.hashes, written.duplicates), (100, 100));
        let index = Index::from_bytes(out.into_inner()).unwrap();
        for &(k, _) in &pairs {
            assert_eq!(index.count(k).unwrap(), u64::MAX, "saturated sum");
        }
    }

    #[test]
    fn checkpoints_resume_in_another_writer() {
        // Few bucket bits, so checkpoints fall inside buckets too; a
        // checkpoint before the layout is chosen; two in a row.
        for (n, expected) in [(20_000, Some(300)), (20_000, None), (3_000, None)] {
            let pairs = keys(n, 11);
            let stops = [1, 2, n / 3, n / 3, n / 2 + 1, n - 1];
            let mut w = SortedWriter::new(Cursor::new(Vec::new()), Kind::Sha1, expected).unwrap();
            let mut dir = Vec::new();
            let mut last = None;
            let mut stop = stops.iter().peekable();
            for (i, &(k, c)) in pairs.iter().enumerate() {
                while stop.next_if(|&&s| s == i).is_some() {
                    let point = w.checkpoint().unwrap();
                    dir.extend_from_slice(&point.dir);
                    last = Some((point, i));
                }
                w.push(k, c).unwrap();
            }
            // The process dies after the last checkpoint; another goes on.
            let (point, from) = last.unwrap();
            let mut bytes = w.get_mut().get_ref().clone();
            bytes.truncate(PAGE * (1 + point.pages as usize));
            let mut out = Cursor::new(bytes);
            out.seek(SeekFrom::End(0)).unwrap();
            let mut resumed = SortedWriter::resume(out, Kind::Sha1, &point, &dir).unwrap();
            for &(k, c) in &pairs[from..] {
                resumed.push(k, c).unwrap();
            }
            let (out, written) = resumed.finish(None).unwrap();
            assert_eq!(written.hashes, n as u64);
            let index = Index::from_bytes(out.into_inner()).unwrap();
            index.verify().unwrap();
            let back: Vec<(Key, u64)> = index.iter().map(Result::unwrap).collect();
            assert_eq!(back, pairs, "n = {n}, expected {expected:?}");
            for &(k, c) in pairs.iter().step_by(7) {
                assert_eq!(
                    index.count(k).unwrap(),
                    c,
                    "n = {n}, expected {expected:?}, bits {}",
                    index.stats().bucket_bits
                );
            }
        }
    }

    #[test]
    fn a_minimum_count_keeps_the_hashes_whose_sum_reaches_it() {
        let pairs = keys(5000, 13);
        let mut w = SortedWriter::new(Cursor::new(Vec::new()), Kind::Sha1, None)
            .unwrap()
            .with_min_count(500);
        for &(k, c) in &pairs {
            // Each count in two parts: the sum decides.
            w.push(k, c / 2).unwrap();
            w.push(k, c - c / 2).unwrap();
        }
        let (out, written) = w.finish(None).unwrap();
        let want: Vec<(Key, u64)> = pairs.iter().copied().filter(|p| p.1 >= 500).collect();
        assert_eq!(written.hashes, want.len() as u64);
        let index = Index::from_bytes(out.into_inner()).unwrap();
        index.verify().unwrap();
        let back: Vec<(Key, u64)> = index.iter().map(Result::unwrap).collect();
        assert_eq!(back, want);
        let stats = index.stats();
        assert_eq!((stats.version, stats.min_count), (5, 500));
        // The layout fits the hashes kept, not those given.
        assert_eq!(
            stats.bucket_bits,
            Layout::for_count(Kind::Sha1, want.len() as u64).h
        );
        for &(k, c) in pairs.iter().step_by(11) {
            let kept = if c >= 500 { c } else { 0 };
            assert_eq!(index.count(k).unwrap(), kept);
        }
        // An index whose header claims a minimum its counts do not reach
        // fails verify.
        let mut w = SortedWriter::new(Cursor::new(Vec::new()), Kind::Sha1, None).unwrap();
        for &(k, c) in &pairs {
            w.push(k, c).unwrap();
        }
        let mut bytes = w.finish(None).unwrap().0.into_inner();
        let mut header = Header::decode(&bytes).unwrap();
        (header.version, header.min_count) = (5, 500);
        bytes[..72].copy_from_slice(&header.encode());
        let claimed = Index::from_bytes(bytes).unwrap();
        let e = claimed.verify().unwrap_err();
        assert!(
            e.to_string().contains("below the index's minimum of 500"),
            "{e}"
        );
    }

    #[test]
    fn a_smaller_hash_is_an_error() {
        let pairs = keys(3, 9);
        let mut w = SortedWriter::new(Cursor::new(Vec::new()), Kind::Sha1, None).unwrap();
        w.push(pairs[1].0, 1).unwrap();
        let e = w.push(pairs[0].0, 1).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Unsorted { .. }), "{e}");
    }

    #[test]
    fn the_source_section_is_kept_and_checked() {
        let pairs = keys(5000, 3);
        let mut source = Source::new("http://127.0.0.1:1", 99);
        for p in 0..crate::RANGES {
            source.push_validator((p % 2 == 0).then_some(&b"\"abc\""[..]));
        }
        let index = write(&pairs, None, Some(&source));
        assert_eq!(index.source().unwrap(), Some(source.clone()));
        let mut w = SortedWriter::new(Cursor::new(Vec::new()), Kind::Sha1, None).unwrap();
        for &(k, c) in &pairs {
            w.push(k, c).unwrap();
        }
        let bytes = w.finish(Some(&source)).unwrap().0.into_inner();
        for &(k, c) in pairs.iter().step_by(97) {
            assert_eq!(Index::count_once_in(&bytes, k).unwrap(), c);
        }
        index.verify().unwrap();
        assert_eq!(index.stats().version, VERSION_WHOLE);
        // A flipped byte in the section: lookups still work, the source
        // and verify report the damage.
        let mut w = SortedWriter::new(Cursor::new(Vec::new()), Kind::Sha1, None).unwrap();
        for &(k, c) in &pairs {
            w.push(k, c).unwrap();
        }
        let mut bytes = w.finish(Some(&source)).unwrap().0.into_inner();
        let n = bytes.len();
        bytes[n - 3] ^= 1;
        let damaged = Index::from_bytes(bytes).unwrap();
        assert_eq!(damaged.count(pairs[10].0).unwrap(), pairs[10].1);
        assert!(damaged.source().is_err());
        assert!(damaged.verify().is_err());
    }
}
