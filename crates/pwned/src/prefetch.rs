//! Software prefetch: a hint to the CPU that memory will be read soon, for
//! reads the hardware's prefetcher cannot foresee (sorting's scattered
//! buckets, a batch of lookups' pages).

/// Asks for the cache line of `items[at]`, if the CPU takes such hints
/// (a hint: nothing is read, whatever `at` is).
#[inline(always)]
pub(crate) fn prefetch<T>(items: &[T], at: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads no memory and faults on no address;
    // `wrapping_add` makes the address without an in-bounds promise.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(items.as_ptr().wrapping_add(at).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (items, at);
}
