//! `pwned update` and `pwned diff`: an index kept current from the Pwned
//! Passwords range API or a delta bundle, and the bundle between two
//! indexes.

use std::path::Path;
use std::process::ExitCode;

use indicatif::ProgressBar;
use seekless_pwned::ErrorKind;

use crate::progress;
use crate::report::Result;

/// Progress of an update, drawn only on a terminal.
struct UpdateBar {
    bar: ProgressBar,
    received: std::sync::atomic::AtomicU64,
    hashes: std::sync::atomic::AtomicU64,
}

impl seekless_pwned::UpdateProgress for UpdateBar {
    fn resumed(&self, from: u32) {
        self.bar.set_position(u64::from(from));
        self.bar.reset_eta();
    }
    fn range(&self, received: u64, hashes: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let received = self.received.fetch_add(received, Relaxed) + received;
        let hashes = self.hashes.fetch_add(hashes, Relaxed) + hashes;
        self.bar.inc(1);
        if self.bar.position().is_multiple_of(512) {
            self.bar
                .set_message(format!("{:.1} MB, {hashes} hashes", received as f64 / 1e6));
        }
    }
}

/// `pwned diff OLD NEW -o CHANGES`.
pub(super) fn diff(old: &Path, new: &Path, output: &Path) -> Result<ExitCode> {
    crate::guard::output_apart(output, &[old, new])?;
    let started = std::time::Instant::now();
    let old_index = crate::pwned::index_file::open(old)?;
    let new_index = crate::pwned::index_file::open(new)?;
    let s = seekless_pwned::write_bundle(output, Some(&old_index), &new_index)?;
    println!(
        "wrote {}: {} ranges changed, {} validators alone, {} bytes of lines in {} bytes, {:.1} s",
        output.display(),
        s.changed,
        s.validators,
        s.lines_bytes,
        s.bytes,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// `pwned update INDEX`, then its gzip ranges file written when `gzip`
/// asks for it, or brought up to date when there is one.
pub(super) fn update(
    index: &Path,
    options: &seekless_pwned::UpdateOptions,
    gzip: bool,
) -> Result<ExitCode> {
    let code = update_index(index, options)?;
    crate::pwned::gzip_ranges::keep_current(index, gzip)?;
    Ok(code)
}

/// `pwned update INDEX`: the index alone.
fn update_index(index: &Path, options: &seekless_pwned::UpdateOptions) -> Result<ExitCode> {
    let progress = UpdateBar {
        bar: progress::counted(u64::from(seekless_pwned::RANGES), "ranges"),
        received: Default::default(),
        hashes: Default::default(),
    };
    let s = seekless_pwned::update(index, options, &progress).map_err(
        |e| -> Box<dyn std::error::Error> {
            match e.kind() {
                // A full disk, a failing one: the partial index and its journal
                // stay, and the same command goes on from the last checkpoint.
                ErrorKind::Io { .. } => {
                    format!("{e}; run the same command again to go on from the last checkpoint")
                        .into()
                }
                _ => e.into(),
            }
        },
    )?;
    progress.bar.finish_and_clear();
    use seekless_pwned::UpdatePath;
    match &s.path {
        UpdatePath::Current => {
            println!(
                "{} is current: {} serves the same corpus ({} hashes); nothing fetched, nothing written, {:.1} s",
                index.display(),
                options.base_url,
                s.hashes,
                s.seconds
            );
            return Ok(ExitCode::SUCCESS);
        }
        UpdatePath::AlreadyApplied => {
            println!(
                "{} is already at the result of {} ({} hashes): nothing to do, nothing written, {:.1} s",
                index.display(),
                options
                    .from_bundle
                    .as_deref()
                    .unwrap_or(Path::new("the bundle"))
                    .display(),
                s.hashes,
                s.seconds
            );
            return Ok(ExitCode::SUCCESS);
        }
        UpdatePath::Bundles { count } => {
            println!(
                "{} {}: {count} delta bundle{} from the mirror, {} bytes downloaded; {} ranges changed",
                if s.created { "wrote" } else { "updated" },
                index.display(),
                if *count == 1 { "" } else { "s" },
                s.received,
                s.changed
            );
        }
        path => {
            println!(
                "{} {}: {} ranges checked, {} changed, {} not modified, {} fetched, {} suspect, {} failed",
                if s.created { "wrote" } else { "updated" },
                index.display(),
                s.checked,
                s.changed,
                s.not_modified,
                s.fetched,
                s.suspect.len(),
                s.failed.len()
            );
            if let UpdatePath::RangesInstead(why) = path {
                println!("  range by range: {why}");
            }
        }
    }
    if s.resumed_from > 0 {
        println!(
            "  resumed an interrupted update at range {}",
            seekless_pwned::prefix_hex(s.resumed_from)
        );
    }
    let only = match s.min_count {
        1 => String::new(),
        m => format!(" (only those seen at least {m} times)"),
    };
    println!(
        "  {} hashes{only}: {} added, {} removed, {} counts changed",
        s.hashes, s.added, s.removed, s.counts_changed
    );
    if options.from_bundle.is_some() {
        println!(
            "  {} bytes of lines applied, {} bytes written, {:.1} s",
            s.received, s.bytes, s.seconds
        );
    } else if matches!(s.path, UpdatePath::Bundles { .. }) {
        println!("  {} bytes written, {:.1} s", s.bytes, s.seconds);
    } else {
        println!(
            "  {} bytes received, {} retries, {} bytes written, {:.1} s",
            s.received, s.retries, s.bytes, s.seconds
        );
    }
    match (&s.bundle, &options.bundle_out) {
        (Some(out), _) => println!("  wrote the delta bundle {}", out.display()),
        (None, Some(dir)) if matches!(s.path, UpdatePath::Bundles { .. }) => {
            println!("  kept the bundles applied in {}", dir.display());
        }
        (None, Some(_)) => println!("  no delta bundle: the corpus did not change"),
        (None, None) => {}
    }
    if s.empty > 0 {
        println!("  {} ranges empty", s.empty);
    }
    if s.past_cache > 0 {
        println!("  {} ranges asked for past caches", s.past_cache);
    }
    Ok(not_taken(&s.suspect, &s.failed, "kept what the index had"))
}

/// Exit 3 when some ranges were not taken: their answers were suspect
/// (would remove hashes or lower counts, or from HIBP were empty) or
/// failed every try; each kind named (the first 32). Else 0.
fn not_taken(suspect: &[u32], failed: &[u32], kept: &str) -> ExitCode {
    if suspect.is_empty() && failed.is_empty() {
        return ExitCode::SUCCESS;
    }
    let named = |prefixes: &[u32]| {
        let mut named: Vec<String> = prefixes
            .iter()
            .take(32)
            .map(|&p| seekless_pwned::prefix_hex(p))
            .collect();
        if prefixes.len() > 32 {
            named.push(format!("and {} more", prefixes.len() - 32));
        }
        named.join(" ")
    };
    if !suspect.is_empty() {
        println!(
            "  {} suspect ranges ({kept}): {}",
            suspect.len(),
            named(suspect)
        );
        eprintln!(
            "seekless: {} ranges answered with fewer hashes or lower counts than the index holds (or empty from HIBP), even asked again past caches: {}; a later run asks again (--accept-removals takes such answers)",
            suspect.len(),
            named(suspect)
        );
    }
    if !failed.is_empty() {
        println!(
            "  {} failed ranges ({kept}): {}",
            failed.len(),
            named(failed)
        );
        eprintln!(
            "seekless: {} ranges failed every try: {}; a later run asks again",
            failed.len(),
            named(failed)
        );
    }
    ExitCode::from(3)
}

/// `pwned update INDEX --check`: exit 0 when current, 1 when the upstream
/// holds newer data, 3 when some ranges' answers were suspect or failed.
pub(super) fn update_check(
    index: &Path,
    options: &seekless_pwned::UpdateOptions,
) -> Result<ExitCode> {
    let progress = UpdateBar {
        bar: progress::counted(u64::from(seekless_pwned::RANGES), "ranges"),
        received: Default::default(),
        hashes: Default::default(),
    };
    let s = seekless_pwned::check_upstream(index, options, &progress)?;
    progress.bar.finish_and_clear();
    let hex = |identity: &[u8; 32]| seekless_pwned::identity_hex(identity);
    let state = if s.current { "current" } else { "newer data" };
    match (&s.upstream, &s.identity) {
        (Some((upstream, hashes)), Some(own)) => println!(
            "{}: {state}: {} serves identity {} ({hashes} hashes); this index has {}",
            index.display(),
            options.base_url,
            hex(upstream),
            hex(own)
        ),
        (Some((upstream, hashes)), None) => println!(
            "{}: newer data: there is no index; {} serves identity {} ({hashes} hashes)",
            index.display(),
            options.base_url,
            hex(upstream)
        ),
        (None, None) => println!(
            "{}: newer data: there is no index; every range of {} is new",
            index.display(),
            options.base_url
        ),
        (None, Some(_)) => {
            if let Some(why) = &s.ranges_because {
                println!("  asked range by range: {why}");
            }
            println!(
                "{}: {state}: {} of {} ranges changed, {} not modified, {} unchanged, {} suspect, {} failed ({} requests, {} bytes received, {:.1} s)",
                index.display(),
                s.changed.unwrap_or(0),
                seekless_pwned::RANGES,
                s.not_modified,
                s.unchanged,
                s.suspect.len(),
                s.failed.len(),
                s.requests,
                s.received,
                s.seconds
            );
        }
    }
    if !s.suspect.is_empty() || !s.failed.is_empty() {
        return Ok(not_taken(
            &s.suspect,
            &s.failed,
            "their data upstream is not known",
        ));
    }
    Ok(if s.current {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `pwned update INDEX --every INTERVAL`: an update, then another INTERVAL
/// after each ends, for as long as the process runs. A run that fails is
/// reported on standard error and tried again at the next; a signal stops
/// it at once (what a killed update leaves, the next run resumes).
pub(super) fn update_every(
    index: &Path,
    options: &seekless_pwned::UpdateOptions,
    every: std::time::Duration,
    gzip: bool,
) -> Result<ExitCode> {
    loop {
        if let Err(e) = update(index, options, gzip) {
            eprintln!(
                "seekless: {}: update failed: {e}; next try in {}",
                seekless_pwned::rfc3339(std::time::SystemTime::now()),
                humantime::format_duration(every)
            );
        }
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        std::thread::sleep(every);
    }
}
