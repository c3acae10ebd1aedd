//! One 4 KiB page of sorted hashes with counts: how it is packed and read
//! (docs/format-pwned.md, "Page").

use crate::build::sort::Record;
use crate::format::bits;
use crate::format::hash::{Key, Kind};
use crate::format::layout::{CHUNK, CONTINUED, Layout, PAGE, PAGE_BITS, PAGE_HEADER};

/// Bits of the Elias gamma code of `count` (≥ 1).
#[inline]
fn gamma_len(count: u64) -> usize {
    2 * (63 - count.leading_zeros() as usize) + 1
}

/// Bits of the unary length part of `count`'s gamma code (≥ 1).
#[inline]
fn length_bits(count: u64) -> usize {
    64 - count.leading_zeros() as usize
}

/// The 64 bits of `hi` then `lo` that start `shift` (0 to 63) bits into
/// `hi`, without a branch for a shift of 0.
#[inline(always)]
fn funnel(hi: u64, lo: u64, shift: u32) -> u64 {
    (hi << shift) | ((lo >> 1) >> (63 - shift))
}

/// Most chunks a remainder has (at most 160 bits, in chunks of [`CHUNK`]).
const MAX_CHUNKS: usize = 3;

/// One page's bytes, at an address aligned as direct I/O asks (its size):
/// packed pages go to the index file from the memory they were packed in.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(4096))]
pub(crate) struct PageBuf(pub [u8; PAGE]);

const _: () = assert!(std::mem::size_of::<PageBuf>() == PAGE);

/// The bytes of `pages`, back to back.
pub(crate) fn page_bytes(pages: &[PageBuf]) -> &[u8] {
    // SAFETY: a `PageBuf` is `PAGE` initialised bytes and no padding (its
    // size, asserted above, equals its alignment), so `pages` is
    // `PAGE * len` bytes in a row; the borrow is `pages`'.
    unsafe { std::slice::from_raw_parts(pages.as_ptr().cast(), std::mem::size_of_val(pages)) }
}

/// A zeroed page added at the end of `pages`.
fn new_page(pages: &mut Vec<PageBuf>) -> &mut [u8; PAGE] {
    pages.reserve(1);
    let at = pages.len();
    // SAFETY: `reserve` made room for one more page, whose bytes are
    // zeroed where they lie (no zeroed 4 KiB made elsewhere and copied in)
    // before the length counts them; zeros are a valid `PageBuf`.
    unsafe {
        pages.as_mut_ptr().add(at).write_bytes(0, 1);
        pages.set_len(at + 1);
    }
    &mut pages[at].0
}

/// A page's directory entry: first bucket (with the continued flag) and checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DirEntry {
    pub first: u64,
    pub crc: u32,
}

/// What [`Encoder::push_sorted`] added.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Merged {
    /// Distinct hashes (after merging).
    pub hashes: u64,
    /// Records merged into the one before.
    pub duplicates: u64,
    /// Sum of the counts (saturating).
    pub total: u64,
}

/// Packs sorted (key, count) pairs into pages.
#[derive(Debug)]
pub(crate) struct Encoder {
    layout: Layout,
    pending: Vec<(u64, Key, u64)>,
    first: u64,
    continued: bool,
    /// The last bucket of a page closed early by [`Encoder::close_page`]: if
    /// the next key is in it, the next page continues it.
    closed_in: Option<u64>,
    bits: usize,
    /// Bits of the pending hashes' count lengths (the page's first section).
    lengths: usize,
    /// The widths of the remainder's chunks, found once for the layout;
    /// `chunk_count` of them are used.
    chunks: [u32; MAX_CHUNKS],
    chunk_count: usize,
    /// Remainder bits.
    l: usize,
    stream: bits::Writer,
    /// Pages written so far.
    pub pages: Vec<PageBuf>,
    /// One entry per page in `pages`.
    pub dir: Vec<DirEntry>,
}

impl Encoder {
    pub(crate) fn new(layout: Layout) -> Self {
        let mut chunks = [0; MAX_CHUNKS];
        let mut chunk_count = 0;
        for (_, len) in layout.chunks() {
            chunks[chunk_count] = len;
            chunk_count += 1;
        }
        Encoder {
            layout,
            pending: Vec::with_capacity(512),
            first: 0,
            continued: false,
            closed_in: None,
            bits: 0,
            lengths: 0,
            chunks,
            chunk_count,
            l: layout.l() as usize,
            stream: bits::Writer::new(PAGE_BITS + 64),
            pages: Vec::new(),
            dir: Vec::new(),
        }
    }

    /// The layout pages are packed with.
    pub(crate) fn layout(&self) -> Layout {
        self.layout
    }

    /// Adds the next key; keys must come in strictly increasing order and
    /// counts be at least 1.
    #[inline]
    pub(crate) fn push(&mut self, key: Key, count: u64) {
        debug_assert!(count >= 1);
        let bucket = self.layout.bucket(key);
        // The usual case, kept small enough to inline: the hash fits the
        // page being filled.
        if !self.append(bucket, key, count) {
            self.push_to_next_page(bucket, key, count);
        }
    }

    /// Adds the hash to the page being filled if there is one and it fits
    /// there; false if not.
    #[inline(always)]
    fn append(&mut self, bucket: u64, key: Key, count: u64) -> bool {
        let Some(&(last, ..)) = self.pending.last() else {
            return false;
        };
        let fixed = 1 + self.l + gamma_len(count);
        let gap = bucket - last;
        if gap < PAGE_BITS as u64 && self.bits + fixed + gap as usize <= PAGE_BITS {
            self.pending.push((bucket, key, count));
            self.bits += fixed + gap as usize;
            self.lengths += length_bits(count);
            return true;
        }
        false
    }

    /// [`Encoder::push`] of a hash that does not fit the page being filled
    /// (or starts the first): closes pages until it fits.
    #[cold]
    fn push_to_next_page(&mut self, bucket: u64, key: Key, count: u64) {
        loop {
            let Some(&(last, ..)) = self.pending.last() else {
                self.continued |= self.closed_in.take() == Some(bucket);
                self.first = bucket;
                self.pending.push((bucket, key, count));
                self.bits = 1 + self.l + gamma_len(count);
                self.lengths = length_bits(count);
                return;
            };
            if self.append(bucket, key, count) {
                return;
            }
            if bucket != last || self.pending[0].0 == bucket {
                // Next bucket, or one bucket fills the whole page: close the
                // page; a bucket that goes on is flagged on the next page.
                let continued = bucket == last;
                self.flush();
                self.continued = continued;
                continue;
            }
            // Keep the bucket together: move its keys to the next page.
            let split = self.pending.partition_point(|&(b, ..)| b < bucket);
            let moved: Vec<_> = self.pending.drain(split..).collect();
            let mut prev = self.first;
            self.bits = 0;
            self.lengths = 0;
            for &(b, _, c) in &self.pending {
                self.bits += (b - prev) as usize + 1 + self.l + gamma_len(c);
                self.lengths += length_bits(c);
                prev = b;
            }
            self.flush();
            for (_, k, c) in moved {
                self.push(k, c);
            }
        }
    }

    /// Adds records sorted by hash, merging those whose kept bits are equal
    /// (their counts summed, saturating).
    pub(crate) fn push_sorted(&mut self, records: &[Record]) -> Merged {
        // The bits kept, as a mask found once.
        let keep = Key {
            hi: u64::MAX,
            mid: u64::MAX,
            lo: u32::MAX,
        }
        .truncated(self.layout.key_bits);
        let kept = |r: &Record| Key {
            hi: r.hi & keep.hi,
            mid: r.mid & keep.mid,
            lo: r.lo & keep.lo,
        };
        let mut merged = Merged::default();
        let mut iter = records.iter().peekable();
        while let Some(r) = iter.next() {
            let key = kept(r);
            let mut count = u64::from(r.count);
            while let Some(next) = iter.next_if(|n| kept(n) == key) {
                count = count.saturating_add(u64::from(next.count));
                merged.duplicates += 1;
            }
            self.push(key, count);
            merged.hashes += 1;
            merged.total = merged.total.saturating_add(count);
        }
        merged
    }

    /// The last bucket of the last page closed by [`Encoder::close_page`].
    pub(crate) fn closed_in(&self) -> Option<u64> {
        self.closed_in
    }

    /// Goes on after a page that ended in `bucket`, closed by
    /// [`Encoder::close_page`] (in another encoder).
    pub(crate) fn after_closed(&mut self, bucket: Option<u64>) {
        self.closed_in = bucket;
    }

    /// Writes out the pending page now (partly filled), so that everything
    /// pushed so far is in `pages`; a bucket that goes on is flagged on the
    /// next page.
    pub(crate) fn close_page(&mut self) {
        if let Some(&(last, ..)) = self.pending.last() {
            self.flush();
            self.closed_in = Some(last);
        }
    }

    /// Writes out the pending page, if any.
    pub(crate) fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        // One loop a chunk count, so that each is unrolled.
        match self.chunk_count {
            0 => self.write_page::<0>(),
            1 => self.write_page::<1>(),
            2 => self.write_page::<2>(),
            _ => self.write_page::<MAX_CHUNKS>(),
        }
        self.pending.clear();
        self.continued = false;
        self.bits = 0;
        self.lengths = 0;
    }

    /// Packs the pending hashes, whose remainders have `C` chunks, into the
    /// next page: one pass fills the four sections (count lengths, buckets,
    /// remainders, mantissas) side by side, each from its own cursor.
    #[inline(always)]
    fn write_page<const C: usize>(&mut self) {
        let lens: [u32; C] = std::array::from_fn(|i| self.chunks[i]);
        // The remainder starts `h` bits into the key: in word `from` of
        // its words, `shift` bits in.
        let h = self.layout.h;
        let (from, shift) = ((h / 64) as usize, h % 64);
        let n = self.pending.len();
        let last = self.pending[n - 1].0;
        let upper = self.lengths;
        let low = upper + (last - self.first) as usize + n;
        let mantissa = low + n * self.l;
        self.stream.clear();
        let w = self.stream.words();
        let (mut g, mut b, mut r, mut m) = (0, upper, low, mantissa);
        let mut prev = self.first;
        for &(bucket, key, count) in &self.pending {
            // Count length: e zeros and a one.
            let e = 63 - count.leading_zeros();
            g += e as usize;
            bits::set(w, g);
            g += 1;
            // Bucket: the gap from the last one in zeros, and a one.
            b += (bucket - prev) as usize;
            bits::set(w, b);
            b += 1;
            prev = bucket;
            // The remainder at the top of three words, then its chunks
            // from where each starts (the shifts are constants).
            let words = [key.hi, key.mid, u64::from(key.lo) << 32, 0, 0];
            let rest: [u64; 3] =
                std::array::from_fn(|i| funnel(words[from + i], words[from + i + 1], shift));
            for (c, len) in lens.into_iter().enumerate() {
                let start = c as u32 * CHUNK;
                let (word, at) = ((start / 64) as usize, start % 64);
                let top = funnel(rest[word], rest[word + 1], at);
                bits::put(w, r, top >> (64 - len), len);
                r += len as usize;
            }
            bits::put(w, m, count & !(1u64 << e), e);
            m += e as usize;
        }
        debug_assert_eq!((g, b, r, m), (upper, low, mantissa, self.bits));
        self.stream.set_len(m);
        let page = new_page(&mut self.pages);
        page[0..2].copy_from_slice(&(n as u16).to_le_bytes());
        page[2..4].copy_from_slice(&(upper as u16).to_le_bytes());
        page[4..6].copy_from_slice(&(low as u16).to_le_bytes());
        self.stream.copy_to(&mut page[PAGE_HEADER..]);
        let flag = if self.continued { CONTINUED } else { 0 };
        self.dir.push(DirEntry {
            first: self.first | flag,
            crc: crc32c::crc32c(page),
        });
    }
}

fn read_wide(stream: &[u8], pos: usize, len: u32) -> u64 {
    if len > 32 {
        bits::read(stream, pos, 32) | (bits::read(stream, pos + 32, len - 32) << 32)
    } else {
        bits::read(stream, pos, len)
    }
}

/// What a page's decoder hands each (hash, count) to, in hash order. Any
/// closure is one; a type whose `pair` is `#[inline(always)]` is inlined
/// into the decoder's loop, where a closure called from each of the
/// loop's variants may be left a call.
pub(crate) trait Visit {
    fn pair(&mut self, key: Key, count: u64);
}

impl<F: FnMut(Key, u64)> Visit for F {
    #[inline(always)]
    fn pair(&mut self, key: Key, count: u64) {
        self(key, count)
    }
}

/// How a page's decoder makes a hash of its bucket and remainder chunks
/// (a type rather than a closure, so that it is inlined into the loop).
trait Assemble<const C: usize> {
    fn key(&self, bucket: u64, chunks: [u64; C]) -> Key;
}

/// Any layout: [`assemble`].
struct General<'p, const C: usize> {
    kind: Kind,
    lens: [u32; C],
    pads: &'p [u32],
}

impl<const C: usize> Assemble<C> for General<'_, C> {
    #[inline(always)]
    fn key(&self, bucket: u64, chunks: [u64; C]) -> Key {
        assemble(self.kind, bucket, chunks, self.lens, self.pads)
    }
}

/// Whole SHA-1 hashes in chunks of 56, 56 and `last` bits: [`sha1()`].
struct WholeSha1 {
    last: u32,
}

impl Assemble<3> for WholeSha1 {
    #[inline(always)]
    fn key(&self, bucket: u64, chunks: [u64; 3]) -> Key {
        sha1(bucket, chunks, self.last)
    }
}

/// `$page`'s stream as [`bits::Words`]: read in place when enough of the
/// index follows it, else copied into `$copy` (a `[u8; bits::BYTES]`
/// declared by the caller, so that it is zeroed only when needed).
macro_rules! words {
    ($page:expr, $copy:ident) => {
        match bits::Words::in_place($page.beyond) {
            Some(words) => words,
            None => {
                $copy = [0; bits::BYTES];
                bits::Words::copied($page.stream, &mut $copy)
            }
        }
    };
}

/// A read-only view of one page.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Page<'a> {
    stream: &'a [u8],
    /// The stream and what follows it in the index, when known (else
    /// empty).
    beyond: &'a [u8],
    keys: usize,
    /// Start of the buckets; the count lengths come before them.
    upper: usize,
    /// Start of the remainders.
    low: usize,
    /// Start of the count mantissas.
    mantissa: usize,
}

/// A decoder's place in a page ([`Page::cursor`]): its next hash `j` of
/// `keys`, where the buckets' next one is looked for (the section ends at
/// `buckets_end`; the j-th one, at `q`, ends bucket `first + q - upper -
/// j`), where the next count length starts, and the next mantissa and
/// remainder.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cursor {
    pub j: usize,
    pub keys: usize,
    pub upper: usize,
    pub bucket_at: usize,
    pub buckets_end: usize,
    pub length_at: usize,
    pub mantissa: usize,
    pub low: usize,
}

/// Where a page's decoding of a window starts ([`Page::start`]).
struct Start {
    /// Hashes before the window.
    skip: usize,
    /// Bit position of the first hash's one in the buckets.
    bucket_at: usize,
    /// Bit position where the first hash's count length starts.
    length_at: usize,
}

impl<'a> Page<'a> {
    /// A view of `bytes` (one page) for `layout`, or `None` when the header
    /// is inconsistent.
    pub(crate) fn new(bytes: &'a [u8], layout: Layout) -> Option<Page<'a>> {
        if bytes.len() != PAGE {
            return None;
        }
        let u16_at = |i: usize| usize::from(u16::from_le_bytes([bytes[i], bytes[i + 1]]));
        let keys = u16_at(0);
        let upper = u16_at(2);
        let low = u16_at(4);
        let mantissa = low + keys * layout.l() as usize;
        if keys == 0 || upper < keys || low < upper + keys || mantissa > PAGE_BITS {
            return None;
        }
        Some(Page {
            stream: &bytes[PAGE_HEADER..],
            beyond: &[],
            keys,
            upper,
            low,
            mantissa,
        })
    }

    /// [`Page::new`] for the page at the start of `bytes`, which go on
    /// past it (to the end of the index): a page decoded whole reads its
    /// stream in place when [`bits::BYTES`] of them follow its header.
    pub(crate) fn with_what_follows(bytes: &'a [u8], layout: Layout) -> Option<Page<'a>> {
        let mut page = Page::new(bytes.get(..PAGE)?, layout)?;
        page.beyond = &bytes[PAGE_HEADER..];
        Some(page)
    }

    /// The count of `key` (whose bucket is `first + rel`), if present.
    #[inline]
    pub(crate) fn count(&self, layout: Layout, rel: u64, key: Key) -> Option<u64> {
        let start = if rel == 0 {
            self.upper
        } else {
            bits::after_nth_zero(self.stream, self.upper, self.low, rel)?
        };
        let before = start - self.upper - rel as usize;
        let run = bits::run_of_ones(self.stream, start, self.low);
        let l = layout.l() as usize;
        'candidates: for j in before..(before + run).min(self.keys) {
            let mut pos = self.low + j * l;
            for (s, len) in layout.chunks() {
                if bits::read(self.stream, pos, len) != key.bits(s, len) {
                    continue 'candidates;
                }
                pos += len as usize;
            }
            return self.count_at(j);
        }
        None
    }

    /// The count of the `j`-th hash of the page.
    fn count_at(&self, j: usize) -> Option<u64> {
        let start = if j == 0 {
            0
        } else {
            bits::after_nth_one(self.stream, 0, self.upper, j as u64)?
        };
        let e = bits::word(self.stream, start).trailing_zeros();
        if e == 64 || start + e as usize >= self.upper {
            return None;
        }
        let offset = start - j;
        Some((1u64 << e) | read_wide(self.stream, self.mantissa + offset, e))
    }

    /// Decodes every (key, count) of the page, in order, into `out`.
    /// Returns `None` when the page's content is inconsistent.
    pub(crate) fn decode(
        &self,
        layout: Layout,
        first: u64,
        out: &mut Vec<(Key, u64)>,
    ) -> Option<()> {
        self.decode_within(layout, first, 0..=u64::MAX, out)
    }

    /// [`Page::decode`], keeping only the hashes whose bucket is in
    /// `window` (the whole page is still checked).
    pub(crate) fn decode_within(
        &self,
        layout: Layout,
        first: u64,
        window: std::ops::RangeInclusive<u64>,
        out: &mut Vec<(Key, u64)>,
    ) -> Option<()> {
        let start = out.len();
        out.reserve(self.keys);
        let done = self.visit_within(layout, first, window, |key, count| out.push((key, count)));
        if done.is_none() {
            out.truncate(start);
        }
        done
    }

    /// Calls `f` with each hash of the page whose bucket is in `window`,
    /// in order, with its count, in one pass over the page's four sections
    /// (no pass leaves anything to the next). `None` when the page's
    /// content is inconsistent, the sections' sizes checked before `f` is
    /// first called, a count's length as it comes: a caller drops what `f`
    /// was given then. The hashes after the window are not read.
    pub(crate) fn visit_within(
        &self,
        layout: Layout,
        first: u64,
        window: std::ops::RangeInclusive<u64>,
        f: impl Visit,
    ) -> Option<()> {
        // The remainder's chunk lengths (at most 160 / CHUNK + 1 of them).
        let mut lens = [0u32; 4];
        let mut n = 0;
        for (_, len) in layout.chunks() {
            lens[n] = len;
            n += 1;
        }
        // The bits a compact index drops, in chunks (none when whole).
        let mut pads = [0u32; 4];
        let mut p = 0;
        let mut pad = layout.kind.bits() - layout.key_bits;
        while pad > 0 {
            pads[p] = pad.min(CHUNK);
            pad -= pads[p];
            p += 1;
        }
        let pads = &pads[..p];
        // One loop a chunk count, so that each is unrolled.
        let (w, kind) = (window, layout.kind);
        match n {
            1 => {
                let lens = [lens[0]];
                let general = General { kind, lens, pads };
                self.visit_chunks(layout, first, w, lens, f, general)
            }
            2 => {
                let lens = [lens[0], lens[1]];
                let general = General { kind, lens, pads };
                self.visit_chunks(layout, first, w, lens, f, general)
            }
            // Whole SHA-1 hashes of any index under 2^40 hashes.
            3 if kind == Kind::Sha1
                && pads.is_empty()
                && lens[..2] == [CHUNK, CHUNK]
                && (8..=48).contains(&lens[2]) =>
            {
                // The first two lengths as constants: no test of them, and
                // their masks immediate (the loop runs short of registers).
                let lens = [CHUNK, CHUNK, lens[2]];
                self.visit_chunks(layout, first, w, lens, f, WholeSha1 { last: lens[2] })
            }
            3 => {
                let lens = [lens[0], lens[1], lens[2]];
                let general = General { kind, lens, pads };
                self.visit_chunks(layout, first, w, lens, f, general)
            }
            _ => {
                let general = General { kind, lens, pads };
                self.visit_chunks(layout, first, w, lens, f, general)
            }
        }
    }

    /// Where a decoder of its own ([`crate::range::render_avx512`]) starts on the hashes of
    /// `window`: as [`Page::start`], with the sections' bounds.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn cursor(
        &self,
        layout: Layout,
        first: u64,
        window: &std::ops::RangeInclusive<u64>,
    ) -> Option<Option<Cursor>> {
        let Some(at) = self.start(first, window)? else {
            return Some(None);
        };
        Some(Some(Cursor {
            j: at.skip,
            keys: self.keys,
            upper: self.upper,
            bucket_at: at.bucket_at,
            buckets_end: self.low,
            length_at: at.length_at,
            mantissa: self.mantissa + (at.length_at - at.skip),
            low: self.low + at.skip * layout.l() as usize,
        }))
    }

    /// Calls `f` with the page's stream as [`bits::Words`]: read in place
    /// when enough of the index follows it, else copied.
    #[inline(always)]
    pub(crate) fn with_words<R>(&self, f: impl FnOnce(&bits::Words) -> R) -> R {
        let mut copy: [u8; bits::BYTES];
        let words = words!(self, copy);
        f(&words)
    }

    /// Checks the page's sections (each holds one one a hash and ends with
    /// its last hash's one, the last bucket and the mantissas' end in
    /// range: then no cursor reads a one past its section and every
    /// position read is under [`PAGE_BITS`]), and finds where the hashes
    /// of `window` start. `None` when the page is inconsistent, `Some(None)`
    /// when no hash of the page is in the window or after it.
    ///
    /// The hashes before the window are passed over, not decoded: the
    /// first of bucket `start` or later follows the (start - first)-th
    /// zero of the buckets, and its count length the j-th one of the count
    /// lengths, j being the ones before it (a range's first page holds the
    /// end of the range before it, half a page on average).
    fn start(&self, first: u64, window: &std::ops::RangeInclusive<u64>) -> Option<Option<Start>> {
        let stream = self.stream;
        let ends_with_its_ones = |start: usize, end: usize| {
            bits::count_ones(stream, start, end) == self.keys && bits::read(stream, end - 1, 1) == 1
        };
        if !ends_with_its_ones(0, self.upper) || !ends_with_its_ones(self.upper, self.low) {
            return None;
        }
        // The last bucket, and the end of the mantissas (e bits a count,
        // and the e's add up to the count lengths' zeros).
        first.checked_add((self.low - self.upper - self.keys) as u64)?;
        if self.mantissa + (self.upper - self.keys) > PAGE_BITS {
            return None;
        }
        let mut at = Start {
            skip: 0,
            bucket_at: self.upper,
            length_at: 0,
        };
        if *window.start() > first {
            let rel = *window.start() - first;
            let Some(bucket_at) = bits::after_nth_zero(stream, self.upper, self.low, rel) else {
                return Some(None);
            };
            at.skip = bucket_at - self.upper - rel as usize;
            if at.skip >= self.keys {
                return Some(None);
            }
            if at.skip > 0 {
                at.length_at = bits::after_nth_one(stream, 0, self.upper, at.skip as u64)?;
            }
            at.bucket_at = bucket_at;
        }
        Some(Some(at))
    }

    /// [`Page::visit_within`] for remainders in `C` chunks of `lens` bits
    /// (the last ones 0 when fewer), made into hashes by `assemble`. Three
    /// cursors go along side by side: the buckets' ones (the j-th one,
    /// after z zeros in all, ends bucket `first + z`), the count lengths'
    /// ones (e zeros and a one: a count of e + 1 bits, whose top bit is
    /// implied and whose e others are the next in the mantissas) and the
    /// remainders (l bits each).
    #[inline(always)]
    fn visit_chunks<const C: usize>(
        &self,
        layout: Layout,
        first: u64,
        window: std::ops::RangeInclusive<u64>,
        lens: [u32; C],
        mut f: impl Visit,
        assemble: impl Assemble<C>,
    ) -> Option<()> {
        let Some(at) = self.start(first, &window)? else {
            return Some(());
        };
        let l = layout.l() as usize;
        let Start {
            skip,
            bucket_at,
            length_at,
        } = at;
        // Every position read below is under PAGE_BITS (checked by `start`).
        // Not `with_words`: through its closure this loop ran 13% slower.
        let mut copy: [u8; bits::BYTES];
        let words = words!(self, copy);
        let mut buckets = words.ones(bucket_at, self.low);
        let mut lengths = words.ones(length_at, self.upper);
        // The mantissas before are as long as the count lengths' zeros.
        let mut mantissa = self.mantissa + (length_at - skip);
        let (mut after, mut low) = (length_at, self.low + skip * l);
        for j in skip..self.keys {
            let bucket = first + (buckets.next()? - self.upper - j) as u64;
            let at = lengths.next()?;
            let e = at - after;
            after = at + 1;
            if e >= 64 {
                return None;
            }
            if bucket > *window.end() {
                break;
            }
            if bucket >= *window.start() {
                let below = (1u64 << e) - 1;
                let bits = if e <= 57 {
                    words.read57(mantissa, e as u32)
                } else {
                    words.word(mantissa) & below
                };
                let count = (1u64 << e) | bits;
                let mut chunks = [0u64; C];
                let mut at = low;
                for (chunk, len) in chunks.iter_mut().zip(lens) {
                    if len > 0 {
                        *chunk = words.read57(at, len);
                        at += len as usize;
                    }
                }
                f.pair(assemble.key(bucket, chunks), count);
            }
            mantissa += e;
            low += l;
        }
        Some(())
    }
}

/// A hash from its bucket and remainder chunks of `lens` bits (0: none),
/// then `pads` bits of zeros (a compact index's dropped bits): shifted in
/// from the bottom of a 192-bit accumulator (top, mid, bottom) in 64-bit
/// words (each chunk is 1 to 56 bits, so no shift is by 64).
#[inline(always)]
fn assemble<const C: usize>(
    kind: Kind,
    bucket: u64,
    chunks: [u64; C],
    lens: [u32; C],
    pads: &[u32],
) -> Key {
    let (mut top, mut mid, mut bottom) = (0u64, 0u64, bucket);
    let mut shift_in = |len: u32, value: u64| {
        top = (top << len) | (mid >> (64 - len));
        mid = (mid << len) | (bottom >> (64 - len));
        bottom = (bottom << len) | value;
    };
    for (chunk, len) in chunks.into_iter().zip(lens) {
        if len > 0 {
            shift_in(len, chunk);
        }
    }
    for &len in pads {
        shift_in(len, 0);
    }
    match kind {
        Kind::Sha1 => Key {
            hi: (top << 32) | (mid >> 32),
            mid: (mid << 32) | (bottom >> 32),
            lo: bottom as u32,
        },
        Kind::Ntlm => Key {
            hi: mid,
            mid: bottom,
            lo: 0,
        },
    }
}

/// A whole SHA-1 hash from its bucket (`48 - last` bits) and remainder
/// chunks of 56, 56 and `last` bits (8 to 48), with fixed-width words:
/// the hash is bucket | c0 | c1 | c2 from the top, so its low 64 bits are
/// c1's low bits over c2, and the 96 above them bucket | c0 | c1's top.
#[inline(always)]
fn sha1(bucket: u64, [c0, c1, c2]: [u64; 3], last: u32) -> Key {
    let low = (c1 << last) | c2;
    let high = (u128::from(bucket) << (48 + last))
        | (u128::from(c0) << (last - 8))
        | u128::from(c1 >> (64 - last));
    Key {
        hi: (high >> 32) as u64,
        mid: ((high as u64) << 32) | (low >> 32),
        lo: low as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::hash::Kind;

    #[test]
    fn whole_sha1_assembly_matches_the_general_one() {
        let mut state = 99u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state ^ state >> 31
        };
        for last in 8..=48 {
            for _ in 0..200 {
                let bucket = next().checked_shr(16 + last).unwrap_or(0);
                let chunks = [next() >> 8, next() >> 8, next() >> (64 - last)];
                let lens = [CHUNK, CHUNK, last];
                assert_eq!(
                    sha1(bucket, chunks, last),
                    assemble(Kind::Sha1, bucket, chunks, lens, &[]),
                    "last chunk of {last} bits"
                );
            }
        }
    }

    fn key(i: u64) -> Key {
        // Spread keys over the space, deterministically.
        let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Key {
            hi: x,
            mid: x.rotate_left(17) ^ i,
            lo: (x >> 7) as u32,
        }
    }

    #[test]
    fn encode_decode_and_lookup_every_key() {
        for (kind, n) in [(Kind::Sha1, 3000u64), (Kind::Ntlm, 2000), (Kind::Sha1, 1)] {
            let layout = Layout::for_count(kind, n);
            let mut keys: Vec<Key> = (0..n)
                .map(|i| {
                    let mut k = key(i);
                    if kind == Kind::Ntlm {
                        k.lo = 0;
                    }
                    k
                })
                .collect();
            keys.sort();
            let counts = |i: usize| [1u64, 2, 3, 7, 1 << 40, u64::MAX, 1][i % 7];
            let mut enc = Encoder::new(layout);
            for (i, &k) in keys.iter().enumerate() {
                enc.push(k, counts(i));
            }
            enc.flush();
            let mut decoded = Vec::new();
            for (p, entry) in enc.dir.iter().enumerate() {
                let bytes = &page_bytes(&enc.pages)[p * PAGE..(p + 1) * PAGE];
                assert_eq!(crc32c::crc32c(bytes), entry.crc);
                let page = Page::new(bytes, layout).unwrap();
                page.decode(layout, entry.first & !CONTINUED, &mut decoded)
                    .unwrap();
            }
            let expect: Vec<_> = keys
                .iter()
                .enumerate()
                .map(|(i, &k)| (k, counts(i)))
                .collect();
            assert_eq!(decoded, expect);
            // Lookups, through the directory.
            for (i, &k) in keys.iter().enumerate() {
                let b = layout.bucket(k);
                let p = enc.dir.partition_point(|e| e.first & !CONTINUED <= b) - 1;
                let page =
                    Page::new(&page_bytes(&enc.pages)[p * PAGE..(p + 1) * PAGE], layout).unwrap();
                assert_eq!(
                    page.count(layout, b - (enc.dir[p].first & !CONTINUED), k),
                    Some(counts(i))
                );
                let mut absent = k;
                absent.mid ^= 1;
                assert_eq!(
                    page.count(layout, b - (enc.dir[p].first & !CONTINUED), absent),
                    None
                );
            }
        }
    }

    /// Pages of `n` SHA-1 keys with counts of every length, and the pairs.
    fn pages_of(n: u64) -> (Layout, Encoder, Vec<(Key, u64)>) {
        let layout = Layout::for_count(Kind::Sha1, n);
        let mut keys: Vec<Key> = (0..n).map(key).collect();
        keys.sort();
        let pairs: Vec<(Key, u64)> = keys
            .into_iter()
            .enumerate()
            .map(|(i, k)| (k, 1 + (i as u64 * 0x9E37_79B9) % (1 << (i % 50))))
            .collect();
        let mut enc = Encoder::new(layout);
        for &(k, c) in &pairs {
            enc.push(k, c);
        }
        enc.flush();
        (layout, enc, pairs)
    }

    #[test]
    fn a_window_gives_exactly_the_pairs_of_its_buckets() {
        let (layout, enc, pairs) = pages_of(3000);
        let bytes = &page_bytes(&enc.pages)[..PAGE];
        let first = enc.dir[0].first & !CONTINUED;
        let page = Page::new(bytes, layout).unwrap();
        let mut all = Vec::new();
        page.decode(layout, first, &mut all).unwrap();
        assert_eq!(all, pairs[..all.len()]);
        let buckets: Vec<u64> = all.iter().map(|(k, _)| layout.bucket(*k)).collect();
        let (lo, hi) = (buckets[0], *buckets.last().unwrap());
        let middle = buckets[buckets.len() / 2];
        for window in [
            lo..=hi,
            lo..=lo,
            hi..=hi,
            lo + 3..=hi - 5,
            0..=middle,
            middle..=middle,
            middle + 1..=u64::MAX,
            hi + 1..=u64::MAX,
        ] {
            let mut got = Vec::new();
            page.decode_within(layout, first, window.clone(), &mut got)
                .unwrap();
            let want: Vec<_> = all
                .iter()
                .filter(|(k, _)| window.contains(&layout.bucket(*k)))
                .copied()
                .collect();
            assert_eq!(got, want, "window {window:?}");
        }
    }

    #[test]
    fn a_page_read_in_place_ignores_what_follows_it() {
        let (layout, enc, _) = pages_of(3000);
        let pages = enc.pages.len();
        for p in [0, pages - 1] {
            let bytes = &page_bytes(&enc.pages)[p * PAGE..(p + 1) * PAGE];
            let first = enc.dir[p].first & !CONTINUED;
            let mut copied = Vec::new();
            Page::new(bytes, layout)
                .unwrap()
                .decode(layout, first, &mut copied)
                .unwrap();
            // Ones after the page: its last bits read in place are masked.
            for filler in [0x00, 0xFF, 0xA5] {
                let mut followed = bytes.to_vec();
                followed.resize(PAGE + crate::format::bits::BYTES, filler);
                let page = Page::with_what_follows(&followed, layout).unwrap();
                let mut in_place = Vec::new();
                page.decode(layout, first, &mut in_place).unwrap();
                assert_eq!(in_place, copied, "page {p}, filler {filler:#x}");
                let mut window = Vec::new();
                let lo = layout.bucket(copied[copied.len() / 2].0);
                page.decode_within(layout, first, lo..=u64::MAX, &mut window)
                    .unwrap();
                let want: Vec<_> = copied
                    .iter()
                    .filter(|(k, _)| layout.bucket(*k) >= lo)
                    .copied()
                    .collect();
                assert_eq!(window, want, "page {p}");
            }
        }
    }

    #[test]
    fn damaged_pages_decode_to_none_or_to_pairs_never_a_panic() {
        let (layout, enc, pairs) = pages_of(3000);
        let first = enc.dir[0].first & !CONTINUED;
        let good = &page_bytes(&enc.pages)[..PAGE];
        let page = Page::new(good, layout).unwrap();
        // The sections' ends: a count length's or a bucket's last one
        // cleared leaves a section a hash short.
        for end in [page.upper, page.low] {
            let mut bad = good.to_vec();
            let at = PAGE_HEADER * 8 + end - 1;
            bad[at / 8] &= !(1 << (at % 8));
            let page = Page::new(&bad, layout).unwrap();
            assert_eq!(page.decode(layout, first, &mut Vec::new()), None);
        }
        // The last bucket past 2^64: refused, not wrapped.
        assert_eq!(page.decode(layout, u64::MAX - 1, &mut Vec::new()), None);
        // Any bit flipped: a page that decodes has no more hashes than its
        // header says, and what fails leaves the output as it was.
        let mut next = crate::testing::rng(17);
        for _ in 0..3000 {
            let at = next() as usize % (PAGE * 8);
            let mut bad = good.to_vec();
            bad[at / 8] ^= 1 << (at % 8);
            let Some(page) = Page::new(&bad, layout) else {
                continue;
            };
            let mut out = vec![pairs[0]];
            match page.decode(layout, first, &mut out) {
                Some(()) => assert!(out.len() - 1 <= page.keys),
                None => assert_eq!(out, [pairs[0]]),
            }
        }
    }

    #[test]
    fn one_bucket_larger_than_a_page_is_continued() {
        let layout = Layout::whole(Kind::Sha1, 20);
        let mut enc = Encoder::new(layout);
        let keys: Vec<Key> = (0..1000u64)
            .map(|i| Key {
                hi: 0x1234_5000_0000_0000 | i,
                mid: i,
                lo: 0,
            })
            .collect();
        for &k in &keys {
            enc.push(k, 1);
        }
        enc.flush();
        assert!(enc.dir.len() >= 4);
        assert!(enc.dir[1..].iter().all(|e| e.first & CONTINUED != 0));
        let mut decoded = Vec::new();
        for (p, entry) in enc.dir.iter().enumerate() {
            let page =
                Page::new(&page_bytes(&enc.pages)[p * PAGE..(p + 1) * PAGE], layout).unwrap();
            page.decode(layout, entry.first & !CONTINUED, &mut decoded)
                .unwrap();
        }
        assert_eq!(decoded.len(), 1000);
    }
}
