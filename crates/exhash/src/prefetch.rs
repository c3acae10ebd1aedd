//! Software prefetch for the batch operations: a hint to the CPU to start
//! loading a group's cache lines while earlier keys are being handled.

/// Ask for the first and last cache lines of `bytes` (at most 128 bytes).
#[inline(always)]
pub fn read(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = bytes.as_ptr() as *const i8;
        // SAFETY: a prefetch is only a hint and never faults; both addresses
        // lie inside `bytes`.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(p);
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(bytes.len().min(128) - 1));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}
