//! Room laid out ahead for a vector's next growth, faulted in a little at
//! a time, so that the insert that grows the vector (the directory at a
//! doubling, the page table past a power of two) copies into memory
//! already there instead of waiting for the kernel to fault in and zero
//! the fresh memory (at 2^16 -> 2^17 directory slots that took longer than
//! the rest of the insert, over 100 µs). A directory's room is filled
//! with the doubled directory itself, a little at a time, so that the
//! doubling has little or nothing left to copy: the copy alone took
//! 65-80 µs at 2^15 -> 2^16 slots on a Zen 3 host.

/// The kernel's small page: one write into each faults the room in.
const SMALL_PAGE: usize = 4096;

/// A vector's next buffer: empty, its capacity the room, of which the
/// first `ready` elements are faulted in.
///
/// Nothing the growth itself need not do waits for it: the room asked
/// for is allocated, then the buffer the growth replaced is freed, each
/// at a later [`Room::fault_in`] (a split's), one a call. Each costs
/// tens of microseconds here (a mapping made or unmapped, the second
/// with the other CPUs told to forget it), and on the insert that grew
/// the page table they came on top of the copy and of a new chunk of
/// pages: 100-140 µs, the longest puts of a load. Allocating before
/// freeing matters: freed first, the old buffer raised the allocator's
/// threshold for mapping large blocks, the room then came from the top of
/// its heap, which it shrank and grew again at nearly every split (14,825
/// `brk` calls in an 8M-pair load, most splits over 10 µs).
#[derive(Debug)]
pub(crate) struct Room<T> {
    buf: Vec<T>,
    ready: usize,
    /// The capacity laid out, allocated at the next `fault_in`.
    want: usize,
    /// The buffer the last growth replaced, freed at the next `fault_in`.
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
    /// [`Room::fault_in`], faulted in from then on.
    pub(crate) fn lay_out(&mut self, capacity: usize) {
        self.buf = Vec::new();
        self.ready = 0;
        self.want = capacity;
        self.doubled = 0;
    }

    /// Keep `old`, the buffer a growth replaced, until the next
    /// [`Room::fault_in`] frees it.
    pub(crate) fn retire(&mut self, old: Vec<T>) {
        self.retired = old;
    }

    /// Take `buf` (emptied; faulted in already) as the room.
    pub(crate) fn recycle(&mut self, mut buf: Vec<T>) {
        buf.clear();
        self.ready = buf.capacity();
        self.want = buf.capacity();
        self.buf = buf;
        self.doubled = 0;
    }

    /// Allocate the room laid out, or else free the retired buffer: true
    /// if this call did one of them (each is work enough for one call).
    fn set_up(&mut self) -> bool {
        if self.buf.capacity() < self.want {
            self.buf = Vec::with_capacity(self.want);
            return true;
        }
        if self.retired.capacity() > 0 {
            self.retired = Vec::new();
            return true;
        }
        false
    }

    /// Allocate the room laid out, or else free the retired buffer, or
    /// else fault in up to `pieces` more 4 KiB of the room, by writing
    /// into it.
    pub(crate) fn fault_in(&mut self, pieces: usize) {
        if self.set_up() {
            return;
        }
        let step = (SMALL_PAGE / std::mem::size_of::<T>().max(1)).max(1);
        let room = self.buf.spare_capacity_mut();
        for _ in 0..pieces {
            let Some(slot) = room.get_mut(self.ready) else {
                self.ready = room.len();
                return;
            };
            slot.write(T::default());
            self.ready += step;
        }
    }

    /// Allocate the room laid out, or else free the retired buffer, or
    /// else write the next `slots` slots of directory `dir`, each twice,
    /// into the room: the doubling then has little or nothing left to
    /// copy. Slots already copied are kept equal to the directory's by
    /// [`Room::mirror`].
    pub(crate) fn copy_ahead(&mut self, dir: &[T], slots: usize) {
        if self.set_up() || self.buf.capacity() < 2 * dir.len() {
            return;
        }
        let end = (self.doubled + slots).min(dir.len());
        self.copy(dir, end);
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

    /// The room as an empty vector of capacity at least `capacity` (its
    /// memory faulted in as far as the splits got; allocated now if the
    /// room is too small), leaving no room behind.
    pub(crate) fn take(&mut self, capacity: usize) -> Vec<T> {
        let mut buf = std::mem::take(&mut self.buf);
        self.ready = 0;
        self.want = 0;
        self.doubled = 0;
        buf.reserve_exact(capacity);
        buf
    }

    /// Bytes of the room faulted in, and of a retired buffer not freed yet.
    pub(crate) fn bytes(&self) -> usize {
        (self.ready.min(self.buf.capacity()) + self.retired.capacity()) * std::mem::size_of::<T>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_faulted_in_piece_by_piece_and_handed_over_empty() {
        let mut room = Room::<u32>::default();
        room.lay_out(5000);
        assert_eq!(room.bytes(), 0);
        // The first call allocates, the next ones fault in.
        room.fault_in(1);
        assert_eq!((room.buf.capacity(), room.bytes()), (5000, 0));
        room.fault_in(1);
        assert_eq!(room.bytes(), 4096);
        room.fault_in(10);
        assert_eq!(
            room.bytes(),
            room.buf.capacity() * 4,
            "no further than the room"
        );
        let buf = room.take(4000);
        assert!(buf.is_empty() && buf.capacity() >= 5000);
        assert_eq!(room.bytes(), 0);
        // Too small a room grows when taken, as does one not allocated yet.
        room.lay_out(10);
        room.fault_in(1);
        assert!(room.take(100).capacity() >= 100);
        room.lay_out(100);
        assert!(room.take(50).capacity() >= 50);
    }

    #[test]
    fn the_room_is_allocated_then_the_retired_buffer_freed_one_call_each() {
        let mut room = Room::<u32>::default();
        room.lay_out(2048);
        room.retire(vec![1; 1024]);
        assert_eq!(room.bytes(), 4096, "the retired buffer counts until freed");
        room.fault_in(4);
        assert_eq!((room.buf.capacity(), room.retired.capacity()), (2048, 1024));
        room.fault_in(4);
        assert_eq!((room.retired.capacity(), room.bytes()), (0, 0));
        room.fault_in(4);
        assert_eq!(room.bytes(), 2048 * 4);
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
    fn a_recycled_buffer_is_room_already_faulted_in() {
        let mut room = Room::<u64>::default();
        room.recycle(vec![7; 1000]);
        assert_eq!(room.bytes(), 8000);
        let buf = room.take(1000);
        assert!(buf.is_empty() && buf.capacity() >= 1000);
    }
}
