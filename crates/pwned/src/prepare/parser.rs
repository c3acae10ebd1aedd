//! The line parser of phase 1: a chunk's lines to records, into whatever
//! sink takes them (a run for the ordered stream, or partitions).

use std::sync::atomic::Ordering;
use std::sync::{Mutex, mpsc};

use crate::error::Result;
use crate::format::hash::prefix_ascii;
use crate::prefetch::prefetch;
use crate::prepare::input::{self, Line, LineError};
use crate::prepare::ordered::{MIN_PACKED_PAGES, Run};
use crate::prepare::partition::{Partitions, Segment};
use crate::prepare::reader::{Chunk, Data, release};
use crate::prepare::shared::{Failure, Fault, Shared};
use crate::prepare::sort::{Record, Sink};

/// Parses a chunk into `sink`, piece by piece. Hashes are decoded 32
/// digits at a time where the CPU has AVX2.
pub(super) fn parse_chunk(
    shared: &Shared,
    chunk: &Chunk,
    prefixes: &[Option<[u8; 5]>],
    sink: &mut impl Sink,
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, the one feature the function enables.
        return unsafe { parse_chunk_avx2(shared, chunk, prefixes, sink) };
    }
    parse_pieces::<false>(shared, chunk, prefixes, sink);
}

/// [`parse_chunk`] compiled for AVX2.
///
/// # Safety
///
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn parse_chunk_avx2(
    shared: &Shared,
    chunk: &Chunk,
    prefixes: &[Option<[u8; 5]>],
    sink: &mut impl Sink,
) {
    parse_pieces::<true>(shared, chunk, prefixes, sink);
}

/// [`parse_chunk`]'s loop; `WIDE` only when the CPU has AVX2.
#[inline(always)]
pub(super) fn parse_pieces<const WIDE: bool>(
    shared: &Shared,
    chunk: &Chunk,
    prefixes: &[Option<[u8; 5]>],
    sink: &mut impl Sink,
) {
    for piece in &chunk.pieces {
        let data = &chunk.data[piece.start..piece.end];
        let prefix = prefixes[piece.part].as_ref();
        if !parse_piece::<WIDE>(shared, chunk.seq, piece.part, data, prefix, sink) {
            return;
        }
    }
}

/// Bytes of text a parser asks for ahead of the line it parses. The
/// hardware's own prefetch stops at each 4 KiB page: the first byte read
/// of a line was the parser's dearest load (12% of its samples at 55M,
/// none with this; the parser 22.6% → 18.5% of the build's samples).
pub(super) const PARSE_AHEAD: usize = 2048;

/// Parses the lines of one input in chunk `seq`; false once the build
/// fails.
#[inline(always)]
pub(super) fn parse_piece<const WIDE: bool>(
    shared: &Shared,
    seq: u64,
    part: usize,
    data: &[u8],
    prefix: Option<&[u8; 5]>,
    sink: &mut impl Sink,
) -> bool {
    let kind = shared.kind();
    let hex_len = kind.hex_len() - if prefix.is_some() { 5 } else { 0 };
    let ascii = prefix.map(prefix_ascii);
    let mut pos = 0;
    let mut local = 0u64;
    let (mut lines, mut zero, mut capped, mut total) = (0u64, 0u64, 0u64, 0u64);
    let fail = |failure| {
        shared.faults.fail(seq, failure);
        false
    };
    while pos < data.len() {
        prefetch(data, pos + PARSE_AHEAD);
        if let Some((key, count, next)) = input::quick_line::<WIDE>(kind, ascii, hex_len, data, pos)
        {
            if let Err(e) = sink.put(Record::new(key, count)) {
                shared.faults.fail(u64::MAX, Failure::Error(e));
                return false;
            }
            lines += 1;
            total = total.saturating_add(u64::from(count));
            pos = next;
            local += 1;
            continue;
        }
        let end = line_end(data, pos, hex_len);
        match input::parse_line(kind, prefix, &data[pos..end]) {
            Ok(Line::Hash {
                key,
                count,
                capped: c,
            }) => {
                if let Err(e) = sink.put(Record::new(key, count)) {
                    shared.faults.fail(u64::MAX, Failure::Error(e));
                    return false;
                }
                lines += 1;
                capped += u64::from(c);
                total = total.saturating_add(u64::from(count));
            }
            Ok(Line::Skip { zero: z }) => zero += u64::from(z),
            Err(LineError::Mixed) => {
                let fault = Fault::Mixed;
                return fail(Failure::Line { part, local, fault });
            }
            Err(LineError::Bad(what)) => {
                if !shared.config.skip_invalid {
                    let fault = Fault::Bad(what);
                    return fail(Failure::Line { part, local, fault });
                }
                shared.invalid(seq, part, local, what);
            }
        }
        pos = end + 1;
        local += 1;
    }
    shared
        .faults
        .chunk_lines
        .lock()
        .expect("lines lock")
        .insert((seq, part), local);
    shared.counters.lines.fetch_add(lines, Ordering::Relaxed);
    shared.counters.zero.fetch_add(zero, Ordering::Relaxed);
    shared.counters.capped.fetch_add(capped, Ordering::Relaxed);
    let _ = shared
        .counters
        .total
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
            Some(t.saturating_add(total))
        });
    true
}

/// End (the `\n`, or the end of data) of the line starting at `pos`. Looks
/// where a well-formed line ends first, then searches.
#[inline]
pub(super) fn line_end(data: &[u8], pos: usize, hex_len: usize) -> usize {
    let colon = pos + hex_len;
    if data.get(colon) == Some(&b':') {
        let mut q = colon + 1;
        while q < data.len() && q - colon <= 20 && data[q].is_ascii_digit() {
            q += 1;
        }
        match data.get(q) {
            Some(b'\n') => return q,
            Some(b'\r') if data.get(q + 1) == Some(&b'\n') => return q + 1,
            None => return q,
            _ => {}
        }
    }
    data[pos..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(data.len(), |i| pos + i)
}

/// The queues a parser thread works from and gives back to.
pub(super) struct Queues<'q> {
    /// Chunks from the reader.
    pub(super) chunks: &'q Mutex<mpsc::Receiver<Chunk>>,
    /// The reader's buffers, given back once parsed.
    pub(super) buffers: mpsc::Sender<Vec<u8>>,
    /// Runs for the ordered stream, in the order of their chunks.
    pub(super) runs: mpsc::SyncSender<Run>,
    /// Runs' memory the stream gives back.
    pub(super) run_memory: &'q Mutex<mpsc::Receiver<Run>>,
}

/// A parser thread: chunks parsed into runs for the stream while the input
/// is in hash order, into `partitions` once it is not, until the reader
/// stops. Returns the segments the partitions hold.
pub(super) fn parse_chunks<'a>(
    shared: &Shared,
    prefixes: &[Option<[u8; 5]>],
    queues: &Queues<'_>,
    mut partitions: Partitions<'a>,
) -> Result<Vec<Vec<Segment<'a>>>> {
    loop {
        let chunk = queues.chunks.lock().expect("chunk lock").recv();
        let Ok(chunk) = chunk else { break };
        if shared.streaming.load(Ordering::Acquire) {
            let memory = queues
                .run_memory
                .lock()
                .expect("runs lock")
                .try_recv()
                .unwrap_or_default();
            let mut run = Run::new(chunk.order, chunk.len, memory);
            if !shared.faults.skip(chunk.seq) {
                parse_chunk(shared, &chunk, prefixes, &mut run);
                if run.sorted
                    && !run.records.is_empty()
                    && let Ok(layout) = shared.layout(&run)
                {
                    run.pack(layout, MIN_PACKED_PAGES);
                }
            }
            // Every run goes, even empty: the stream takes them in order.
            let _ = queues.runs.send(run);
        } else if !partitions.failed() && !shared.faults.skip(chunk.seq) {
            // A holder whose spill failed has reported it and only passes
            // the rest of the input by.
            parse_chunk(shared, &chunk, prefixes, &mut partitions);
        }
        match chunk.data {
            Data::Read(buffer) => {
                let _ = queues.buffers.send(buffer);
            }
            Data::Mapped(map) => release(&map, &chunk.pieces),
        }
    }
    partitions.into_segments()
}
