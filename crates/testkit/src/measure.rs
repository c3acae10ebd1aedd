//! What every engine's macro benchmark needs: timing (wall and CPU time),
//! medians, and evicting a file from the page cache for cold runs.

use std::path::Path;
use std::time::{Duration, Instant};

/// Wall-clock time and CPU time (user + system, this process and the
/// children it waited for): on a shared machine the CPU time is the steadier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Sample {
    pub wall: Duration,
    pub cpu: Duration,
}

impl Sample {
    /// Wall-clock seconds.
    pub fn secs(&self) -> f64 {
        self.wall.as_secs_f64()
    }
}

/// Runs `f` once: its wall and CPU time, and its result.
pub fn time<T>(f: impl FnOnce() -> T) -> (Sample, T) {
    let (start, cpu) = (Instant::now(), cpu_now());
    let out = f();
    let sample = Sample {
        wall: start.elapsed(),
        cpu: cpu_now() - cpu,
    };
    (sample, out)
}

/// Runs `f` once: its wall-clock seconds, and its result.
pub fn seconds<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let start = Instant::now();
    let out = f();
    (start.elapsed().as_secs_f64(), out)
}

/// CPU time used so far by this process and the children it waited for
/// (zero off Unix: the benchmarks measure on Linux; the tests built with
/// this crate also run under Wine).
#[cfg(not(unix))]
pub fn cpu_now() -> Duration {
    Duration::ZERO
}

/// CPU time used so far by this process and the children it waited for.
#[cfg(unix)]
pub fn cpu_now() -> Duration {
    let mut total = Duration::ZERO;
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        // SAFETY: getrusage writes one rusage struct into the zeroed one given.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            libc::getrusage(who, &mut usage);
            usage
        };
        for tv in [usage.ru_utime, usage.ru_stime] {
            total += Duration::new(tv.tv_sec as u64, tv.tv_usec as u32 * 1000);
        }
    }
    total
}

/// The median (the upper one of an even count).
pub fn median<T: PartialOrd>(mut v: Vec<T>) -> T {
    assert!(!v.is_empty(), "the median of no samples");
    v.sort_by(|a, b| a.partial_cmp(b).expect("comparable samples"));
    v.swap_remove(v.len() / 2)
}

/// The median wall time and the median CPU time of several runs.
pub fn median_sample(samples: Vec<Sample>) -> Sample {
    Sample {
        wall: median(samples.iter().map(|s| s.wall).collect()),
        cpu: median(samples.iter().map(|s| s.cpu).collect()),
    }
}

/// Evicts `path` from the page cache, so the next read of it is cold
/// (Unix only: cold figures are taken on Linux).
#[cfg(not(unix))]
pub fn drop_cache(path: &Path) {
    panic!(
        "drop_cache({}): page-cache eviction is Unix-only",
        path.display()
    );
}

/// Evicts `path` from the page cache, so the next read of it is cold.
#[cfg(unix)]
pub fn drop_cache(path: &Path) {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path).expect("open for fadvise");
    // SAFETY: a valid open descriptor; posix_fadvise only advises the kernel.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0, "posix_fadvise failed");
}
