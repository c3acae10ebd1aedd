//! Software prefetch: a hint to the CPU to start loading cache lines a
//! lookup or insert is about to read, so their misses overlap other work.

/// Ask for every cache line of `bytes`, which lies in at most `lines`
/// lines (its length and where it can start within a line set how many):
/// the line at each 64 bytes from its start but the last, then its last
/// byte's. Where `bytes` always starts far enough into a line, that is one
/// prefetch fewer than a line every 64 bytes and the last byte's.
#[inline(always)]
pub fn read(bytes: &[u8], lines: usize) {
    debug_assert!(lines >= 1 && lines * 64 >= bytes.len());
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = bytes.as_ptr() as *const i8;
        for at in offsets(bytes.len(), lines) {
            // SAFETY: a prefetch is only a hint and never faults; every
            // offset lies inside `bytes`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(at)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, lines);
}

/// The offsets [`read`] asks for, in `len` bytes lying in at most `lines`
/// lines: none when `len` is 0.
#[inline(always)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn offsets(len: usize, lines: usize) -> impl Iterator<Item = usize> {
    let last = len.wrapping_sub(1);
    (0..lines - 1)
        .map(move |line| (line * 64).min(last))
        .chain(std::iter::once(last))
        .take(if len == 0 { 0 } else { lines })
}

#[cfg(test)]
mod tests {
    use super::offsets;

    /// Whether the offsets touch every line of `len` bytes starting `skew`
    /// bytes into a line.
    fn covers(skew: usize, len: usize, lines: usize) -> bool {
        let want: std::collections::BTreeSet<usize> = (skew..skew + len).map(|b| b / 64).collect();
        let got: std::collections::BTreeSet<usize> =
            offsets(len, lines).map(|at| (skew + at) / 64).collect();
        want == got
    }

    #[test]
    fn the_offsets_cover_every_line_the_bytes_lie_in() {
        for len in 1..300 {
            for skew in 0..64 {
                let lines = (skew + len - 1) / 64 + 1;
                assert!(covers(skew, len, lines), "{skew} {len}");
                // Fewer lines than the bytes lie in cannot cover them.
                assert!(lines == 1 || !covers(skew, len, lines - 1), "{skew} {len}");
            }
        }
        assert_eq!(offsets(0, 3).count(), 0);
    }
}
