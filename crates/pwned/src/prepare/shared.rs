//! What the reader and the parsers of phase 1 share: the configuration
//! they read ([`Config`]), the counters they add to ([`Counters`]), the
//! bookkeeping of what went wrong ([`Faults`]: the earliest failure, the
//! first invalid line, and the lines per chunk that turn a line within a
//! chunk into a line number in its file), and what the first lines decide
//! (the kind, the layout of input in hash order, whether it still is).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::error::{Error, ErrorKind, Result};
use crate::format::hash::Kind;
use crate::format::layout::Layout;
use crate::prepare::input::Part;
use crate::prepare::options::BuildOptions;
use crate::prepare::ordered::Run;
use crate::write::sorted::check_key_bits;

/// Something wrong with a line, located by chunk and line within it until
/// all chunks before it are counted.
pub(super) enum Fault {
    Bad(String),
    Mixed,
}

/// Why a build stops.
pub(super) enum Failure {
    Error(Error),
    Line {
        part: usize,
        local: u64,
        fault: Fault,
    },
}

/// What the build was asked and what it knows of its inputs before
/// reading them: read only.
pub(super) struct Config {
    pub(super) skip_invalid: bool,
    /// The bits of each hash to keep (`None`: all).
    pub(super) key_bits: Option<u32>,
    /// Bytes of all inputs (0 when one of them is of unknown size).
    pub(super) input_bytes: u64,
    /// For each input, whether it is a per-range file (lines without the
    /// five-digit prefix).
    pub(super) prefixed: Vec<bool>,
    /// Each input's name, for errors.
    pub(super) names: Vec<String>,
}

/// What the parsers count, for the summary.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) lines: AtomicU64,
    pub(super) invalid: AtomicU64,
    pub(super) zero: AtomicU64,
    pub(super) capped: AtomicU64,
    pub(super) total: AtomicU64,
}

/// What went wrong, kept so that the error reported is the one of the
/// earliest line, whatever order the parsers met them in.
#[derive(Default)]
pub(super) struct Faults {
    /// The earliest failure so far, by chunk sequence number.
    pub(super) failure: Mutex<Option<(u64, Failure)>>,
    pub(super) stop: AtomicBool,
    /// The earliest invalid line skipped: (seq, part, line in chunk, what).
    pub(super) first_invalid: Mutex<Option<(u64, usize, u64, String)>>,
    /// Lines in each chunk parsed so far: seq -> (part, lines).
    pub(super) chunk_lines: Mutex<BTreeMap<(u64, usize), u64>>,
}

/// State shared by the reader and the parsers.
pub(super) struct Shared {
    pub(super) config: Config,
    pub(super) counters: Counters,
    pub(super) faults: Faults,
    pub(super) kind: AtomicU8,
    /// The layout of input in hash order.
    pub(super) layout: OnceLock<Layout>,
    /// Whether parsers hand their records to the stream (see `ordered`).
    pub(super) streaming: AtomicBool,
}

impl Shared {
    pub(super) fn new(parts: &[Part], input_bytes: u64, options: &BuildOptions) -> Shared {
        Shared {
            config: Config {
                skip_invalid: options.skip_invalid,
                key_bits: options.key_bits,
                input_bytes,
                prefixed: parts.iter().map(|p| p.prefix.is_some()).collect(),
                names: parts.iter().map(|p| p.name.clone()).collect(),
            },
            counters: Counters::default(),
            faults: Faults::default(),
            kind: AtomicU8::new(0),
            layout: OnceLock::new(),
            streaming: AtomicBool::new(true),
        }
    }

    pub(super) fn kind(&self) -> Kind {
        Kind::from_code(self.kind.load(Ordering::Relaxed)).unwrap_or(Kind::Sha1)
    }

    /// The layout of an index of input in hash order, chosen once, from
    /// the first run that asks: the corpus size is estimated from the
    /// run's share of the input's bytes or, when the size of the input is
    /// not known (standard input), of the hash space.
    pub(super) fn layout(&self, run: &Run) -> Result<Layout> {
        let kind = self.kind();
        let bits = self.config.key_bits.unwrap_or(kind.bits());
        check_key_bits(kind, bits)?;
        Ok(*self.layout.get_or_init(|| {
            let records = run.records.len() as f64;
            let n = match (run.records.first(), run.records.last()) {
                _ if self.config.input_bytes > 0 && run.bytes > 0 => {
                    self.config.input_bytes as f64 / run.bytes as f64 * records
                }
                (Some(a), Some(b)) if run.sorted && b.hi > a.hi => {
                    records * 2f64.powi(64) / (b.hi - a.hi) as f64
                }
                _ => records,
            };
            Layout::compact(kind, n as u64, bits)
        }))
    }

    /// An invalid line skipped: counted, and kept if it is the earliest.
    pub(super) fn invalid(&self, seq: u64, part: usize, local: u64, what: String) {
        self.counters.invalid.fetch_add(1, Ordering::Relaxed);
        let mut first = self.faults.first_invalid.lock().expect("invalid lock");
        if first.as_ref().is_none_or(|(s, ..)| seq < *s) {
            *first = Some((seq, part, local, what));
        }
    }

    /// The earliest failure, as the error the build returns (lines named by
    /// file and line number).
    pub(super) fn take_error(&self) -> Option<Error> {
        let (seq, failure) = self.faults.failure.lock().expect("failure lock").take()?;
        Some(match failure {
            Failure::Error(e) => e,
            Failure::Line { part, local, fault } => {
                let line = self.faults.line_number(seq, part, local);
                let file = self.config.names[part].clone();
                match fault {
                    Fault::Bad(what) => Error::bad_line(&file, line, what),
                    Fault::Mixed => ErrorKind::MixedKinds { file, line }.into(),
                }
            }
        })
    }

    /// The earliest invalid line skipped, as `file:line: what`.
    pub(super) fn take_first_invalid(&self) -> Option<String> {
        self.faults
            .first_invalid
            .lock()
            .expect("invalid lock")
            .take()
            .map(|(seq, part, local, what)| {
                let line = self.faults.line_number(seq, part, local);
                format!("{}:{line}: {what}", self.config.names[part])
            })
    }
}

impl Faults {
    pub(super) fn fail(&self, seq: u64, failure: Failure) {
        let mut slot = self.failure.lock().expect("failure lock");
        if slot.as_ref().is_none_or(|(s, _)| seq < *s) {
            *slot = Some((seq, failure));
        }
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether chunk `seq` can no longer change the outcome.
    pub(super) fn skip(&self, seq: u64) -> bool {
        self.stop.load(Ordering::Relaxed)
            && self
                .failure
                .lock()
                .expect("failure lock")
                .as_ref()
                .is_some_and(|(s, _)| seq > *s)
    }

    /// The 1-based line number in its file of line `local` (0-based) of
    /// chunk `seq`.
    pub(super) fn line_number(&self, seq: u64, part: usize, local: u64) -> u64 {
        let counts = self.chunk_lines.lock().expect("lines lock");
        let before: u64 = counts
            .range(..(seq, 0))
            .filter(|((_, p), _)| *p == part)
            .map(|(_, n)| n)
            .sum();
        before + local + 1
    }
}
