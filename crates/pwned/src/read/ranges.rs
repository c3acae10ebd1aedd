//! Range answers written straight from an index's pages
//! ([`Index::write_range`]), by the renderer the processor is best at
//! ([`Renderer::picked`]): AVX-512 or AVX2 batches for the layouts they
//! take, else a line at a time with AVX2, NEON or portable digits.

use crate::error::Result;
use crate::range::render::Lines;
use crate::range::renderer::Renderer;
use crate::read::index::Index;

impl Index {
    /// The range API's answer for the range `prefix` (below 2^20, the 5 hex
    /// digits of `GET /range/{prefix}`), appended to `out`: the same bytes
    /// as `write_range_body` of its pairs, each
    /// pair written as a line as it is decoded, none held in between, by
    /// the fastest renderer the processor has. On error `out` is left as
    /// it was.
    pub fn write_range(&self, prefix: u32, out: &mut Vec<u8>) -> Result<()> {
        self.write_range_by(Renderer::picked(self.layout()), prefix, out)
    }

    /// [`Index::write_range`] by `renderer`; one that does not write this
    /// index's ranges here (not on this processor, turned off, or AVX-512
    /// for another layout) writes as [`Renderer::Portable`].
    pub(crate) fn write_range_by(
        &self,
        renderer: Renderer,
        prefix: u32,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let start = out.len();
        // A range of the whole corpus holds ~1,000 hashes (~40 KB of
        // lines); more grow the buffer as they come.
        out.reserve(1100 * (self.kind().hex_len() + 8));
        let (layout, kind) = (self.layout(), self.kind());
        let renderer = if renderer.writes(layout) {
            renderer
        } else {
            Renderer::Portable
        };
        let done = match renderer {
            #[cfg(target_arch = "x86_64")]
            Renderer::Avx512 => {
                // Eight lines at a time; with 20 bucket bits or more a
                // range is whole buckets, so no hash needs its top bits
                // checked.
                let mut lines = Lines::new(kind, out);
                self.range_pages(u64::from(prefix), 20, |page, first, window| {
                    // SAFETY: `writes` found the processor's features.
                    unsafe {
                        crate::range::render_avx512::write_lines(
                            &page, layout, first, window, &mut lines,
                        )
                    }
                })
            }
            #[cfg(target_arch = "x86_64")]
            Renderer::Avx2 if crate::range::render_avx2::batches(layout) => {
                // Four lines at a time, whole buckets as for AVX-512.
                let mut lines = Lines::new(kind, out);
                self.range_pages(u64::from(prefix), 20, |page, first, window| {
                    // SAFETY: `writes` found the processor's features.
                    unsafe {
                        crate::range::render_avx2::write_lines(
                            &page, layout, first, window, &mut lines,
                        )
                    }
                })
            }
            #[cfg(target_arch = "x86_64")]
            Renderer::Avx2 => {
                use crate::range::render_avx2::{Avx2, visit_page};
                let avx2 = Avx2::here().expect("`writes` found AVX2");
                let lines = Lines::with(avx2, kind, out);
                self.visit_range_by(u64::from(prefix), 20, lines, |page, first, window, f| {
                    // SAFETY: `writes` found the processor's features.
                    unsafe { visit_page(&page, layout, first, window, f) }
                })
            }
            #[cfg(target_arch = "aarch64")]
            Renderer::Neon => {
                let lines = Lines::with(crate::range::render_neon::Neon, kind, out);
                self.visit_range(u64::from(prefix), 20, lines)
            }
            _ => self.visit_range(u64::from(prefix), 20, Lines::new(kind, out)),
        };
        if done.is_err() {
            out.truncate(start);
        }
        done
    }
}

/// [`Index::write_range`] by `renderer`, for tests, benchmarks and fuzz
/// targets that compare the renderers: one that does not write this
/// index's ranges here (not on this processor, turned off, or AVX-512 for
/// another layout) writes as [`Renderer::Portable`].
#[cfg(feature = "test-util")]
pub fn write_range_by(
    index: &Index,
    renderer: Renderer,
    prefix: u32,
    out: &mut Vec<u8>,
) -> Result<()> {
    index.write_range_by(renderer, prefix, out)
}
