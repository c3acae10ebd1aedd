//! A page packed: hashes in order into Elias-Fano buckets, bit-packed
//! remainders and gamma-coded counts, page after page.

use crate::format::bits;
use crate::format::hash::Key;
use crate::format::layout::{CHUNK, CONTINUED, Layout, PAGE, PAGE_BITS, PAGE_HEADER};

use super::*;

/// A zeroed page added at the end of `pages`.
pub(super) fn new_page(pages: &mut Vec<PageBuf>) -> &mut [u8; PAGE] {
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
    pub(super) layout: Layout,
    pub(super) pending: Vec<(u64, Key, u64)>,
    pub(super) first: u64,
    pub(super) continued: bool,
    /// The last bucket of a page closed early by [`Encoder::close_page`]: if
    /// the next key is in it, the next page continues it.
    pub(super) closed_in: Option<u64>,
    pub(super) bits: usize,
    /// Bits of the pending hashes' count lengths (the page's first section).
    pub(super) lengths: usize,
    /// The widths of the remainder's chunks, found once for the layout;
    /// `chunk_count` of them are used.
    pub(super) chunks: [u32; MAX_CHUNKS],
    pub(super) chunk_count: usize,
    /// Remainder bits.
    pub(super) l: usize,
    pub(super) stream: bits::Writer,
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
    pub(super) fn append(&mut self, bucket: u64, key: Key, count: u64) -> bool {
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
    pub(super) fn push_to_next_page(&mut self, bucket: u64, key: Key, count: u64) {
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

    /// Adds (hash, count) pairs sorted by hash, merging those whose kept
    /// bits are equal (their counts summed, saturating).
    pub(crate) fn push_sorted(&mut self, pairs: impl IntoIterator<Item = (Key, u32)>) -> Merged {
        // The bits kept, as a mask found once.
        let keep = Key {
            hi: u64::MAX,
            mid: u64::MAX,
            lo: u32::MAX,
        }
        .truncated(self.layout.key_bits);
        let kept = |k: &Key| Key {
            hi: k.hi & keep.hi,
            mid: k.mid & keep.mid,
            lo: k.lo & keep.lo,
        };
        let mut merged = Merged::default();
        let mut iter = pairs.into_iter().peekable();
        while let Some((k, c)) = iter.next() {
            let key = kept(&k);
            let mut count = u64::from(c);
            while let Some((_, next)) = iter.next_if(|(n, _)| kept(n) == key) {
                count = count.saturating_add(u64::from(next));
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
    pub(super) fn write_page<const C: usize>(&mut self) {
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
