//! A page read: its pairs handed to a [`Visit`], whole or from a bucket
//! on, by the general decoder or the one for whole SHA-1 hashes.

use crate::format::bits;
use crate::format::hash::{Key, Kind};
use crate::format::layout::{CHUNK, Layout, PAGE, PAGE_BITS, PAGE_HEADER};

pub(super) fn read_wide(stream: &[u8], pos: usize, len: u32) -> u64 {
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
pub(super) trait Assemble<const C: usize> {
    fn key(&self, bucket: u64, chunks: [u64; C]) -> Key;
}

/// Any layout: [`assemble`].
pub(super) struct General<'p, const C: usize> {
    pub(super) kind: Kind,
    pub(super) lens: [u32; C],
    pub(super) pads: &'p [u32],
}

impl<const C: usize> Assemble<C> for General<'_, C> {
    #[inline(always)]
    fn key(&self, bucket: u64, chunks: [u64; C]) -> Key {
        assemble(self.kind, bucket, chunks, self.lens, self.pads)
    }
}

/// Whole SHA-1 hashes in chunks of 56, 56 and `last` bits: [`sha1()`].
pub(super) struct WholeSha1 {
    pub(super) last: u32,
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
    pub(super) stream: &'a [u8],
    /// The stream and what follows it in the index, when known (else
    /// empty).
    pub(super) beyond: &'a [u8],
    pub(super) keys: usize,
    /// Start of the buckets; the count lengths come before them.
    pub(super) upper: usize,
    /// Start of the remainders.
    pub(super) low: usize,
    /// Start of the count mantissas.
    pub(super) mantissa: usize,
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
pub(super) struct Start {
    /// Hashes before the window.
    pub(super) skip: usize,
    /// Bit position of the first hash's one in the buckets.
    pub(super) bucket_at: usize,
    /// Bit position where the first hash's count length starts.
    pub(super) length_at: usize,
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
    pub(super) fn count_at(&self, j: usize) -> Option<u64> {
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
        self.visit_within_inlined(layout, first, window, f)
    }

    /// [`Page::visit_within`], inlined into its caller: into a function
    /// compiled for more instructions than the build's baseline
    /// ([`crate::range::render_avx2`]), whose `f` can then be inlined
    /// into the loop.
    #[inline(always)]
    pub(crate) fn visit_within_inlined(
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
    /// when enough of the index follows it, else copied. (The AVX-512
    /// renderer's.)
    #[cfg(target_arch = "x86_64")]
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
    pub(super) fn start(
        &self,
        first: u64,
        window: &std::ops::RangeInclusive<u64>,
    ) -> Option<Option<Start>> {
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
    pub(super) fn visit_chunks<const C: usize>(
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
pub(super) fn assemble<const C: usize>(
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
pub(super) fn sha1(bucket: u64, [c0, c1, c2]: [u64; 3], last: u32) -> Key {
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
