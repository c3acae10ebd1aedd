//! Software prefetch for the batch operations: a hint to the CPU to start
//! loading a group's cache lines while earlier keys are being handled.

/// Ask for every cache line `bytes` lies in: one a 64 bytes from its
/// start, and its last byte's (the line after them when `bytes` does not
/// start a line). Unrolled for a constant length.
#[inline(always)]
pub fn read(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = bytes.as_ptr() as *const i8;
        let mut at = 0;
        // SAFETY: a prefetch is only a hint and never faults; every
        // address lies inside `bytes`.
        unsafe {
            while at < bytes.len() {
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(at));
                at += 64;
            }
            if let Some(last) = bytes.len().checked_sub(1) {
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(last));
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}
