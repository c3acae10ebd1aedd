//! Room laid out ahead for a directory's next doubling, filled a little
//! at a time by the splits, so that the insert that doubles the directory
//! finds the doubled directory there, in memory already faulted in,
//! instead of waiting for the kernel to fault in and zero fresh memory (at
//! 2^16 -> 2^17 directory slots that took longer than the rest of the
//! insert, over 100 µs) and for the copy (65-80 µs at 2^15 -> 2^16 slots
//! on a Zen 3 host). The page table grows in chunks instead
//! (`page_table.rs`).

/// A directory's next buffer: empty, its capacity the room, of which the
/// first `ready` elements are written.
///
/// Nothing the doubling itself need not do waits for it: the room asked
/// for is allocated, then the buffer the doubling replaced is freed a
/// piece at a time, each at a later [`Room::copy_ahead`] (a split's), one
/// a call. Allocating costs tens of microseconds here (20-60 µs from
/// 32 KiB on, a mapping made or the heap grown), and so does freeing
/// ([`FREE_STEP`]). Allocating before freeing matters: freed first, the old buffer raised the allocator's threshold
/// for mapping large blocks, the room then came from the top of its heap,
/// which it shrank and grew again at nearly every split (14,825 `brk`
/// calls in an 8M-pair load, most splits over 10 µs).
/// Bytes of a retired buffer freed at a time, from its end. Freeing
/// memory costs ~0.7 µs a 4 KiB page on the 2-core Zen 3 VM, on top of
/// ~10 µs a call (`munmap` of 256 KiB written: 36-49 µs; of 1 MiB:
/// 93-136 µs). All at once, the two directories the doubling to 2^16
/// slots retired (128 and 256 KiB) took 118-148 µs on one split, on top of
/// the split's own 10-20. A shrink in place gives the tail back (`mremap`
/// for a block the allocator mapped on its own): 1-45 µs a piece.
const FREE_STEP: usize = 16 << 10;

#[derive(Debug)]
pub(crate) struct Room<T> {
    buf: Vec<T>,
    ready: usize,
    /// The capacity laid out, allocated at the next `copy_ahead`.
    want: usize,
    /// The buffer the last growth replaced, freed at the next `copy_ahead`.
    retired: Vec<T>,
    /// Of a directory's room: how many of the directory's slots are in
    /// the room already, each twice ([`Room::copy_ahead`]).
    doubled: usize,
}

impl<T> Default for Room<T> {
    fn default() -> Self {
        Room {
            buf: Vec::new(),
            ready: 0,
            want: 0,
            retired: Vec::new(),
            doubled: 0,
        }
    }
}

impl<T: Copy + Default> Room<T> {
    /// Lay out room for `capacity` elements: allocated at the next
    /// [`Room::copy_ahead`], filled from then on.
    pub(crate) fn lay_out(&mut self, capacity: usize) {
        self.buf = Vec::new();
        self.ready = 0;
        self.want = capacity;
        self.doubled = 0;
    }

    /// Keep `old`, the buffer a growth replaced, until the next
    /// [`Room::copy_ahead`] frees it.
    pub(crate) fn retire(&mut self, old: Vec<T>) {
        self.retired = old;
    }

    /// The directory was halved (in place) to `len` slots: the room, as
    /// much of it as is allocated and faulted in, stays, to be filled
    /// again for doubling back to `2 * len`. Dropped, or the halved
    /// directory put in a new vector, either cost up to 700 µs on a remove
    /// on the 2-core VM (2 MiB given back, 256 KiB of fresh memory).
    pub(crate) fn restart(&mut self, len: usize) {
        self.want = 2 * len;
        self.doubled = 0;
    }

    /// Allocate the room laid out, or else free the next [`FREE_STEP`]
    /// bytes of the retired buffer: true if this call did one of them
    /// (each is work enough for one split).
    fn set_up(&mut self) -> bool {
        if self.buf.capacity() < self.want {
            self.buf = Vec::with_capacity(self.want);
            return true;
        }
        let cap = self.retired.capacity();
        if cap > 0 {
            let keep = cap.saturating_sub(FREE_STEP / size_of::<T>().max(1));
            if keep == 0 {
                self.retired = Vec::new();
            } else {
                self.retired.truncate(keep);
                self.retired.shrink_to(keep);
            }
            return true;
        }
        false
    }

    /// Allocate the room laid out, or else free a piece of the retired
    /// buffer, or else write the next `slots` slots of directory `dir`,
    /// each twice, into the room: the doubling then has little or nothing
    /// left to copy. Slots already copied are kept equal to the
    /// directory's by [`Room::mirror`]. True if the call allocated or
    /// freed memory: the caller's share of such work for one split.
    pub(crate) fn copy_ahead(&mut self, dir: &[T], slots: usize) -> bool {
        if self.set_up() {
            return true;
        }
        if self.buf.capacity() >= 2 * dir.len() {
            let end = (self.doubled + slots).min(dir.len());
            self.copy(dir, end);
        }
        false
    }

    /// Write directory slots `doubled..end`, each twice, into the room.
    fn copy(&mut self, dir: &[T], end: usize) {
        let from = self.doubled;
        let room = &mut self.buf.spare_capacity_mut()[2 * from..2 * end];
        for (pair, &slot) in room.chunks_exact_mut(2).zip(&dir[from..end]) {
            pair[0].write(slot);
            pair[1].write(slot);
        }
        self.doubled = end;
        self.ready = self.ready.max(2 * end);
    }

    /// Directory slots `slots` now hold `value`: so do their copies in the
    /// room, where they were copied already.
    pub(crate) fn mirror(&mut self, slots: std::ops::Range<usize>, value: T) {
        let end = slots.end.min(self.doubled);
        if slots.start < end {
            self.buf.spare_capacity_mut()[2 * slots.start..2 * end]
                .fill(std::mem::MaybeUninit::new(value));
        }
    }

    /// Directory `dir` doubled (each slot twice), in the room: what
    /// [`Room::copy_ahead`] did not copy yet is copied now (all of it if
    /// the room was not allocated yet). Leaves no room behind.
    pub(crate) fn take_doubled(&mut self, dir: &[T]) -> Vec<T> {
        let n = dir.len();
        if self.buf.capacity() < 2 * n {
            self.buf = Vec::with_capacity(2 * n);
            self.doubled = 0;
        }
        self.copy(dir, n);
        let mut buf = std::mem::take(&mut self.buf);
        // SAFETY: `copy` wrote the first `2 * self.doubled` elements of the
        // spare capacity (each slot twice, kept so by `mirror`), and
        // `self.doubled` is now `n`; the capacity is at least `2 * n`.
        unsafe { buf.set_len(2 * n) };
        self.ready = 0;
        self.want = 0;
        self.doubled = 0;
        buf
    }

    /// Whether the slots copied ahead are those of `dir`, each twice.
    pub(crate) fn doubles(&self, dir: &[T]) -> bool
    where
        T: PartialEq,
    {
        // SAFETY: the first `2 * self.doubled` elements of the buffer, within
        // its capacity, were written by `copy` (and `mirror`).
        let copied = unsafe { std::slice::from_raw_parts(self.buf.as_ptr(), 2 * self.doubled) };
        copied
            .chunks_exact(2)
            .zip(dir)
            .all(|(pair, slot)| pair[0] == *slot && pair[1] == *slot)
    }

    /// Bytes of the room written, and of a retired buffer not freed yet.
    pub(crate) fn bytes(&self) -> usize {
        (self.ready.min(self.buf.capacity()) + self.retired.capacity()) * std::mem::size_of::<T>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_room_is_allocated_then_the_retired_buffer_freed_a_piece_a_call() {
        let mut room = Room::<u32>::default();
        room.lay_out(2048);
        // 40 KiB: freed in three pieces, the last one 8 KiB.
        room.retire(vec![1; 10 << 10]);
        assert_eq!(
            room.bytes(),
            40 << 10,
            "the retired buffer counts until freed"
        );
        let dir = vec![3; 1024];
        assert!(room.copy_ahead(&dir, 4));
        assert_eq!(room.buf.capacity(), 2048, "allocated first");
        assert_eq!(room.retired.capacity(), 10 << 10);
        for left in [6 << 10, 2 << 10, 0] {
            assert!(room.copy_ahead(&dir, 4));
            assert_eq!(room.retired.capacity(), left);
            assert_eq!(
                room.bytes(),
                room.retired.capacity() * 4,
                "nothing copied yet"
            );
        }
        assert!(!room.copy_ahead(&dir, 4));
        assert_eq!(room.bytes(), 8 * 4, "then four slots a call, each twice");
    }

    #[test]
    fn a_directory_copied_ahead_doubles_with_its_changes() {
        let mut dir: Vec<u32> = (0..1000).collect();
        let mut room = Room::<u32>::default();
        room.lay_out(2000);
        room.copy_ahead(&dir, 300);
        assert_eq!(room.doubled, 0, "the first call only allocates");
        room.copy_ahead(&dir, 300);
        room.copy_ahead(&dir, 300);
        assert_eq!((room.doubled, room.bytes()), (600, 1200 * 4));
        assert!(room.doubles(&dir));
        // A change across the copied edge: mirrored where copied.
        dir[550..700].fill(7);
        room.mirror(550..700, 7);
        assert!(room.doubles(&dir));
        dir[10] = 8;
        assert!(!room.doubles(&dir), "a change not mirrored shows");
        room.mirror(10..11, 8);
        let doubled = room.take_doubled(&dir);
        let want: Vec<u32> = dir.iter().flat_map(|&s| [s, s]).collect();
        assert_eq!(doubled, want);
        assert_eq!((room.doubled, room.bytes()), (0, 0));
        // Taken before any copy ahead (the room not even allocated).
        room.lay_out(2000);
        assert_eq!(room.take_doubled(&dir), want);
    }

    #[test]
    fn a_halved_directory_doubles_again_into_the_room_it_kept() {
        let mut room = Room::<u64>::default();
        room.lay_out(2000);
        let dir: Vec<u64> = (0..1000).collect();
        room.copy_ahead(&dir, 100);
        room.copy_ahead(&dir, 100);
        let at = room.buf.as_ptr();
        room.restart(500);
        assert_eq!(room.doubled, 0, "nothing of the halved directory copied");
        assert_eq!(room.bytes(), 200 * 8, "what was written stays");
        let half: Vec<u64> = (0..500).map(|i| 7 * i).collect();
        assert!(!room.copy_ahead(&half, 100), "nothing to allocate");
        assert_eq!(room.doubled, 100);
        let doubled = room.take_doubled(&half);
        assert_eq!(doubled.as_ptr(), at, "doubled into the room kept");
        assert!(
            doubled
                .iter()
                .copied()
                .eq(half.iter().flat_map(|&s| [s, s]))
        );
    }
}
