//! Room laid out ahead for a directory's next doubling and halving, each
//! filled a little at a time, so that the insert that doubles the
//! directory, or the remove that halves it, finds the new directory there,
//! in memory already faulted in, instead of waiting for the kernel to
//! fault in and zero fresh memory (at 2^16 -> 2^17 directory slots that
//! took longer than the rest of the insert, over 100 µs) and for the copy
//! (65-80 µs at 2^15 -> 2^16 slots on a Zen 3 host; halving the 2^16
//! slots in place, 105 µs). The splits fill the doubling's room, the
//! merges the halving's. The page table grows in chunks instead
//! (`page_table.rs`).
//!
//! The buffers go round. A doubling's old directory, twice the length of
//! the one a halving would go back to, becomes the halving's room; a
//! halving's old directory becomes the doubling's room, and the doubling's
//! old room the halving's. Emptying a table therefore allocates and frees
//! nothing after its first merge, and a table keeps the memory of its
//! largest directories (under 2% of what its store keeps for reuse). A
//! merge never frees: allocating a 128 KiB room on a merge took 65-290 µs
//! on the 2-core VM, freeing 16 KiB of a retired buffer 20-90 µs.
//!
//! Nothing a doubling itself need not do waits for it: its room is
//! allocated at a later split, and a buffer it replaced (the halving's
//! old room) is freed a piece at a time ([`FREE_STEP`]), a piece a split.
//! Allocating costs tens of microseconds here (20-60 µs from 32 KiB on, a
//! mapping made or the heap grown), and so does freeing. Allocating before
//! freeing matters: freed first, the old buffer raised the allocator's
//! threshold for mapping large blocks, the room then came from the top of
//! its heap, which it shrank and grew again at nearly every split (14,825
//! `brk` calls in an 8M-pair load, most splits over 10 µs).

/// Bytes of a retired buffer freed at a time, from its end. Freeing
/// memory costs ~0.7 µs a 4 KiB page on the 2-core Zen 3 VM, on top of
/// ~10 µs a call (`munmap` of 256 KiB written: 36-49 µs; of 1 MiB:
/// 93-136 µs). All at once, the two directories the doubling to 2^16
/// slots retired (128 and 256 KiB) took 118-148 µs on one split, on top of
/// the split's own 10-20; a halving's 2 MiB room (before the buffers
/// went round), up to 710 µs on a remove. A shrink in place gives the tail back (`mremap` for a block
/// the allocator mapped on its own): 1-45 µs a piece.
const FREE_STEP: usize = 16 << 10;

/// A directory's next buffers: the room of its next doubling, the
/// halved directory built ahead for its next halving, and the buffers
/// being given back.
#[derive(Debug)]
pub(crate) struct Room<T> {
    /// The doubling's room: empty, its capacity the room, of which the
    /// first `ready` elements are written.
    buf: Vec<T>,
    ready: usize,
    /// The capacity laid out, allocated at the next `copy_ahead`.
    want: usize,
    /// How many of the directory's slots are in the room already, each
    /// twice ([`Room::copy_ahead`]).
    doubled: usize,
    /// The directory halved so far: `half[j]` is the directory's slot
    /// `2j` ([`Room::halve_ahead`]).
    half: Vec<T>,
    /// Buffers the directory or its rooms replaced, freed a piece at a
    /// time, the last first.
    retired: Vec<Vec<T>>,
}

impl<T> Default for Room<T> {
    fn default() -> Self {
        Room {
            buf: Vec::new(),
            ready: 0,
            want: 0,
            doubled: 0,
            half: Vec::new(),
            retired: Vec::new(),
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

    /// Keep `old`, a buffer the directory or a room replaced, until
    /// later calls of [`Room::copy_ahead`] have freed it.
    fn retire(&mut self, old: Vec<T>) {
        if old.capacity() > 0 {
            self.retired.push(old);
        }
    }

    /// Allocate the room laid out, or else free the next [`FREE_STEP`]
    /// bytes of the retired buffers: true if this call did one of them
    /// (each is work enough for one split).
    fn set_up(&mut self) -> bool {
        if self.buf.capacity() < self.want {
            self.buf = Vec::with_capacity(self.want);
            self.ready = 0;
            return true;
        }
        let Some(last) = self.retired.last_mut() else {
            return false;
        };
        let keep = last
            .capacity()
            .saturating_sub(FREE_STEP / size_of::<T>().max(1));
        if keep == 0 {
            self.retired.pop();
        } else {
            last.truncate(keep);
            last.shrink_to(keep);
        }
        true
    }

    /// Allocate the room laid out, or else free a piece of the retired
    /// buffers, or else write the next `slots` slots of directory `dir`,
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

    /// Allocate the halving's room if it has none (only a table that was
    /// opened or made at its depth), or else write the next `slots` slots
    /// of directory `dir` halved (every other slot) into it: the halving
    /// then has little or nothing left to copy. Slots already written are
    /// kept equal to the directory's by [`Room::mirror`]. True if the call
    /// allocated memory: the caller's share of such work for one merge.
    /// It frees none: a merge leaves that to the splits.
    pub(crate) fn halve_ahead(&mut self, dir: &[T], slots: usize) -> bool {
        let n = dir.len() / 2;
        if self.make_half(n) {
            return true;
        }
        let from = self.half.len();
        let end = (from + slots).min(n);
        self.half.extend(dir[2 * from..2 * end].iter().step_by(2));
        false
    }

    /// Give the halving's room a capacity of `n` at least: true if it had
    /// to be allocated.
    fn make_half(&mut self, n: usize) -> bool {
        if self.half.capacity() >= n {
            return false;
        }
        let small = std::mem::replace(&mut self.half, Vec::with_capacity(n));
        self.retire(small);
        true
    }

    /// Directory slots `slots` now hold `value`: so do their copies in the
    /// rooms, where they were copied already.
    pub(crate) fn mirror(&mut self, slots: std::ops::Range<usize>, value: T) {
        let end = slots.end.min(self.doubled);
        if slots.start < end {
            self.buf.spare_capacity_mut()[2 * slots.start..2 * end]
                .fill(std::mem::MaybeUninit::new(value));
        }
        let (from, to) = (
            slots.start.div_ceil(2),
            slots.end.div_ceil(2).min(self.half.len()),
        );
        if from < to {
            self.half[from..to].fill(value);
        }
    }

    /// Double directory `dir` (each slot twice) into the room, copying
    /// what [`Room::copy_ahead`] did not copy yet (all of it if the room
    /// was not allocated yet). The old directory, twice the length of
    /// the one it halves back to, is the halving's room; the halving's
    /// old room is the next doubling's if large enough (a table that
    /// shrank and grows again), else retired, and room is laid out.
    pub(crate) fn double(&mut self, dir: &mut Vec<T>) {
        let n = dir.len();
        if self.buf.capacity() < 2 * n {
            let small = std::mem::replace(&mut self.buf, Vec::with_capacity(2 * n));
            self.retire(small);
            self.doubled = 0;
        }
        self.copy(dir, n);
        let mut doubled = std::mem::take(&mut self.buf);
        // SAFETY: `copy` wrote the first `2 * self.doubled` elements of the
        // spare capacity (each slot twice, kept so by `mirror`), and
        // `self.doubled` is now `n`; the capacity is at least `2 * n`.
        unsafe { doubled.set_len(2 * n) };
        let mut old = std::mem::replace(dir, doubled);
        old.clear();
        let stale = std::mem::replace(&mut self.half, old);
        self.doubled = 0;
        self.want = 4 * n;
        if stale.capacity() >= self.want {
            // Written as far as it is long: taken as faulted in.
            self.ready = stale.capacity();
            self.buf = stale;
        } else {
            self.ready = 0;
            self.retire(stale);
        }
    }

    /// Halve directory `dir` (every other slot) into the halving's room,
    /// copying what [`Room::halve_ahead`] did not copy yet. The old
    /// directory, twice the new one's length, is the next doubling's room,
    /// and the doubling's old room the next halving's: memory the table
    /// faulted in for its largest directory goes round, and a halving
    /// neither allocates (unless the halving's room was never made) nor
    /// frees any.
    pub(crate) fn halve(&mut self, dir: &mut Vec<T>) {
        let n = dir.len() / 2;
        self.make_half(n);
        let from = self.half.len();
        self.half.extend(dir[2 * from..].iter().step_by(2));
        debug_assert_eq!(self.half.len(), n);
        let mut old = std::mem::replace(dir, std::mem::take(&mut self.half));
        old.clear();
        self.half = std::mem::replace(&mut self.buf, old);
        self.ready = self.buf.capacity();
        self.want = 2 * n;
        self.doubled = 0;
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

    /// Whether the slots halved ahead are every other slot of `dir`.
    pub(crate) fn halves(&self, dir: &[T]) -> bool
    where
        T: PartialEq,
    {
        self.half.len() <= dir.len() / 2
            && self
                .half
                .iter()
                .zip(dir.iter().step_by(2))
                .all(|(a, b)| a == b)
    }

    /// Bytes of the rooms written (the halving's room counted whole, as
    /// it was a directory or a room before), and of the retired buffers.
    pub(crate) fn bytes(&self) -> usize {
        let retired: usize = self.retired.iter().map(Vec::capacity).sum();
        (self.ready.min(self.buf.capacity()) + self.half.capacity() + retired) * size_of::<T>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes of the retired buffers.
    fn retired(room: &Room<u32>) -> Vec<usize> {
        room.retired.iter().map(|b| b.capacity() * 4).collect()
    }

    #[test]
    fn the_room_is_allocated_then_the_retired_buffers_freed_a_piece_a_call() {
        let mut room = Room::<u32>::default();
        room.lay_out(2048);
        // 40 KiB and 20 KiB: freed in pieces of 16 KiB, the last first.
        room.retire(vec![1; 10 << 10]);
        room.retire(vec![1; 5 << 10]);
        room.retire(Vec::new());
        assert_eq!(room.bytes(), 60 << 10, "retired buffers count until freed");
        let dir = vec![3; 1024];
        assert!(room.copy_ahead(&dir, 4));
        assert_eq!(room.buf.capacity(), 2048, "allocated first");
        assert_eq!(retired(&room), [40 << 10, 20 << 10]);
        for left in [
            vec![40 << 10, 4 << 10],
            vec![40 << 10],
            vec![24 << 10],
            vec![8 << 10],
            vec![],
        ] {
            assert!(room.copy_ahead(&dir, 4));
            assert_eq!(retired(&room), left);
            assert_eq!(room.bytes(), left.iter().sum(), "nothing copied yet");
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
        let want: Vec<u32> = dir.iter().flat_map(|&s| [s, s]).collect();
        let old_at = dir.as_ptr();
        let mut doubled = dir.clone();
        room.double(&mut dir);
        assert_eq!(dir, want);
        assert_eq!(room.half.as_ptr(), old_at, "the old directory halves back");
        assert!(room.half.is_empty() && room.half.capacity() == 1000);
        assert_eq!(room.want, 4000, "room laid out for the next doubling");
        assert_eq!((room.doubled, room.bytes()), (0, 1000 * 4));
        // Doubled before any copy ahead (the room not even allocated).
        let mut fresh = Room::<u32>::default();
        fresh.lay_out(2000);
        fresh.double(&mut doubled);
        assert_eq!(doubled, want);
    }

    #[test]
    fn a_directory_halved_ahead_halves_with_its_changes() {
        let mut dir: Vec<u32> = (0..1000).collect();
        let mut room = Room::<u32>::default();
        room.lay_out(2000);
        room.copy_ahead(&dir, 0);
        room.copy_ahead(&dir, 100);
        assert!(room.halve_ahead(&dir, 150), "the first call only allocates");
        assert!(room.half.is_empty() && room.half.capacity() >= 500);
        assert!(!room.halve_ahead(&dir, 150));
        assert!(!room.halve_ahead(&dir, 150));
        assert_eq!(room.half.len(), 300);
        assert!(room.halves(&dir));
        // Changes mirrored where written: odd edges, a slot of its own.
        for (range, value) in [(301..601, 7), (0..1, 8), (5..6, 9), (598..599, 6)] {
            dir[range.clone()].fill(value);
            room.mirror(range, value);
            assert!(room.halves(&dir) && room.doubles(&dir));
        }
        dir[4] = 5;
        assert!(!room.halves(&dir), "a change not mirrored shows");
        room.mirror(4..5, 5);
        let (room_at, old_at) = (room.buf.as_ptr(), dir.as_ptr());
        room.halve(&mut dir);
        let want: Vec<u32> = (0..1000)
            .step_by(2)
            .map(|i| match i {
                0 => 8,
                4 => 5,
                598 => 6,
                301..601 => 7,
                _ => i,
            })
            .collect();
        assert_eq!(dir, want);
        assert_eq!(room.buf.as_ptr(), old_at, "the old directory doubles back");
        assert_eq!(room.half.as_ptr(), room_at, "the old room halves next");
        assert!(room.half.is_empty() && room.retired.is_empty());
        assert_eq!(room.bytes(), (1000 + 2000) * 4);
        let mut buffers = [dir.as_ptr(), room.buf.as_ptr(), room.half.as_ptr()];
        buffers.sort();
        // Halving and doubling again: nothing allocated, nothing freed.
        assert!(!room.halve_ahead(&dir, 100));
        room.halve(&mut dir);
        assert!(!room.copy_ahead(&dir, 100));
        room.double(&mut dir);
        assert!(!room.copy_ahead(&dir, 100));
        room.double(&mut dir);
        assert!(
            dir.iter()
                .copied()
                .eq(want.iter().step_by(2).flat_map(|&s| [s; 4]))
        );
        assert!(room.retired.is_empty());
        let mut three = [dir.as_ptr(), room.buf.as_ptr(), room.half.as_ptr()];
        three.sort();
        assert_eq!(three, buffers, "the same three buffers went round");
    }

    #[test]
    fn a_doubling_drops_what_was_halved_ahead() {
        let mut dir: Vec<u32> = (0..64).collect();
        let mut room = Room::<u32>::default();
        room.halve_ahead(&dir, 8);
        room.halve_ahead(&dir, 8);
        assert_eq!(room.half.len(), 8);
        room.double(&mut dir);
        assert!(room.half.is_empty() && room.halves(&dir));
        assert_eq!(retired(&room), [32 * 4], "the old halving's room retired");
        assert!(
            !room.halve_ahead(&dir, 8),
            "the old directory is room enough"
        );
        assert!(room.halves(&dir) && room.half.len() == 8);
        // Halved with nothing written ahead: all of it now.
        let mut fresh = Room::<u32>::default();
        let mut d: Vec<u32> = (0..64).collect();
        fresh.halve(&mut d);
        assert!(d.iter().copied().eq((0..64).step_by(2)));
    }
}
