//! Room laid out ahead for a vector's next growth, faulted in a little at
//! a time, so that the insert that grows the vector (the directory at a
//! doubling, the page table past a power of two) copies into memory
//! already there instead of waiting for the kernel to fault in and zero
//! the fresh memory (at 2^16 -> 2^17 directory slots that took longer than
//! the rest of the insert, over 100 µs).

/// The kernel's small page: one write into each faults the room in.
const SMALL_PAGE: usize = 4096;

/// A vector's next buffer: empty, its capacity the room, of which the
/// first `ready` elements are faulted in.
#[derive(Debug)]
pub(crate) struct Room<T> {
    buf: Vec<T>,
    ready: usize,
}

impl<T> Default for Room<T> {
    fn default() -> Self {
        Room {
            buf: Vec::new(),
            ready: 0,
        }
    }
}

impl<T: Copy + Default> Room<T> {
    /// Lay out room for `capacity` elements (allocated, not faulted in).
    pub(crate) fn lay_out(&mut self, capacity: usize) {
        self.buf = Vec::with_capacity(capacity);
        self.ready = 0;
    }

    /// Take `buf` (emptied; faulted in already) as the room.
    pub(crate) fn recycle(&mut self, mut buf: Vec<T>) {
        buf.clear();
        self.ready = buf.capacity();
        self.buf = buf;
    }

    /// Fault in up to `pieces` more 4 KiB of the room, by writing into it.
    pub(crate) fn fault_in(&mut self, pieces: usize) {
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

    /// The room as an empty vector of capacity at least `capacity` (its
    /// memory faulted in as far as the splits got; allocated now if the
    /// room is too small), leaving no room behind.
    pub(crate) fn take(&mut self, capacity: usize) -> Vec<T> {
        let mut buf = std::mem::take(&mut self.buf);
        self.ready = 0;
        buf.reserve_exact(capacity);
        buf
    }

    /// Bytes of the room faulted in.
    pub(crate) fn bytes(&self) -> usize {
        self.ready.min(self.buf.capacity()) * std::mem::size_of::<T>()
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
        // Too small a room grows when taken.
        room.lay_out(10);
        assert!(room.take(100).capacity() >= 100);
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
