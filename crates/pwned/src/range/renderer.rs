//! Which renderer writes a range's lines ([`Renderer`]): the fastest the
//! processor has, found once at run time, for the index's layout; the
//! others stay callable for tests, benchmarks and fuzzing, which compare
//! them with the portable one.

#[cfg(any(test, feature = "test-util"))]
use crate::format::hash::{Key, Kind};
use crate::format::layout::Layout;
#[cfg(any(test, feature = "test-util"))]
use crate::range::render::{LONGEST_LINE, Lines, ROOM, push_all};

/// The ways a range's lines can be written. Each writes the same bytes;
/// `Renderer::picked` chooses the fastest the processor has (its
/// features looked up once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Renderer {
    /// One line at a time, with SSE2 on x86-64 and words elsewhere.
    Portable,
    /// x86-64-v3 (AVX2, BMI, LZCNT): four lines at a time for whole hashes
    /// of 20 to 40 bucket bits (indexes of 2^19 hashes or more), else one
    /// line at a time, each line's digits made by AVX2.
    Avx2,
    /// Eight lines at a time with AVX-512 VBMI and VBMI2 (whole SHA-1
    /// hashes of 20 bucket bits or more; other indexes take the best of
    /// the others).
    Avx512,
    /// One line at a time, each line's digits made by NEON (every
    /// aarch64 processor).
    Neon,
}

impl Renderer {
    /// Every renderer, slowest first.
    pub const ALL: [Renderer; 4] = [
        Renderer::Portable,
        Renderer::Neon,
        Renderer::Avx2,
        Renderer::Avx512,
    ];

    /// Whether this processor has what the renderer needs and it was not
    /// turned off in the environment (`SEEKLESS_NO_AVX512=1`,
    /// `SEEKLESS_NO_AVX2=1`, `SEEKLESS_NO_NEON=1`: for measuring the
    /// slower paths on a processor that has the faster ones).
    pub fn here(self) -> bool {
        match self {
            Renderer::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Renderer::Avx2 => crate::range::render_avx2::has_avx2(),
            #[cfg(target_arch = "x86_64")]
            Renderer::Avx512 => crate::range::render_avx512::has_avx512(),
            #[cfg(target_arch = "aarch64")]
            Renderer::Neon => crate::range::render_neon::has_neon(),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Whether the renderer is here and writes the ranges of an index of
    /// `layout` (AVX-512: whole SHA-1 hashes, 20 to 40 bucket bits).
    pub(crate) fn writes(self, layout: Layout) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Renderer::Avx512 => crate::range::render_avx512::usable(layout),
            _ => {
                let _ = layout;
                self.here()
            }
        }
    }

    /// The fastest renderer here for an index of `layout`.
    pub(crate) fn picked(layout: Layout) -> Renderer {
        *Renderer::ALL
            .iter()
            .rev()
            .find(|r| r.writes(layout))
            .unwrap_or(&Renderer::Portable)
    }
}

/// [`write_range_body`](crate::range::render::write_range_body) by
/// `renderer` (one that writes a line at a time; [`Renderer::Avx512`],
/// which writes from pages, and a renderer this processor lacks write as
/// [`Renderer::Portable`]).
#[cfg(any(test, feature = "test-util"))]
pub fn write_range_body_by(
    renderer: Renderer,
    kind: Kind,
    items: &[(Key, u64)],
    out: &mut Vec<u8>,
) {
    out.reserve(items.len() * LONGEST_LINE + ROOM);
    match renderer {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `here` found AVX2 and the rest of x86-64-v3 used.
        Renderer::Avx2 if renderer.here() => unsafe {
            crate::range::render_avx2::write_pairs(kind, items, out)
        },
        #[cfg(target_arch = "aarch64")]
        Renderer::Neon if renderer.here() => push_all(
            Lines::with(crate::range::render_neon::Neon, kind, out),
            items,
        ),
        _ => push_all(Lines::new(kind, out), items),
    }
}
