//! `pwned stats` and `pwned verify`: what an index holds, and whether every
//! page of it is sound.

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use seekless_pwned::{ErrorKind, Index, Kind};

use crate::report::Result;

/// `pwned stats`: `field\tvalue` lines, or one JSON object with the same
/// fields.
pub(super) fn stats(path: &Path, as_json: bool) -> Result<ExitCode> {
    use serde_json::{Value, json};
    let index = crate::pwned::index_file::open(path)?;
    let s = index.stats();
    let kind = match s.kind {
        Kind::Sha1 => "sha1",
        Kind::Ntlm => "ntlm",
    };
    let per_hash = if s.hashes == 0 {
        0.0
    } else {
        s.bytes as f64 / s.hashes as f64
    };
    // Each field as text (rounded where a person reads it) and as JSON.
    let mut fields: Vec<(&str, String, Value)> = vec![
        (
            "file",
            path.display().to_string(),
            json!(path.display().to_string()),
        ),
        ("format_version", s.version.to_string(), json!(s.version)),
        ("kind", kind.to_string(), json!(kind)),
        ("hashes", s.hashes.to_string(), json!(s.hashes)),
        (
            "total_count",
            s.total_count.to_string(),
            json!(s.total_count),
        ),
        ("pages", s.pages.to_string(), json!(s.pages)),
        (
            "bucket_bits",
            s.bucket_bits.to_string(),
            json!(s.bucket_bits),
        ),
        ("key_bits", s.key_bits.to_string(), json!(s.key_bits)),
        ("min_count", s.min_count.to_string(), json!(s.min_count)),
    ];
    if s.is_compact() {
        let rate = s.false_positive_rate();
        fields.push(("false_positive_rate", format!("{rate:.3e}"), json!(rate)));
    }
    fields.push(("bytes", s.bytes.to_string(), json!(s.bytes)));
    fields.push(("bytes_per_hash", format!("{per_hash:.3}"), json!(per_hash)));
    if let Some(source) = index.source()? {
        let updated = seekless_pwned::rfc3339(source.updated_time());
        fields.push(("source", source.url.clone(), json!(source.url)));
        fields.push(("updated", updated.clone(), json!(updated)));
        let validators = source.validators();
        fields.push(("validators", validators.to_string(), json!(validators)));
    }
    // What update and bundles compare (docs/format-bundle.md): recorded by
    // the update that wrote the index, else computed from every page. A
    // compact index lists no range, so it has none.
    if !s.is_compact() {
        let identity = seekless_pwned::identity_hex(&index.identity()?);
        fields.push(("identity", identity.clone(), json!(identity)));
    }
    let mut out = io::stdout().lock();
    if as_json {
        let object: serde_json::Map<String, Value> = fields
            .into_iter()
            .map(|(name, _, value)| (name.to_string(), value))
            .collect();
        writeln!(out, "{}", Value::Object(object))?;
    } else {
        for (name, text, _) in fields {
            writeln!(out, "{name}\t{text}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `pwned verify INDEX`: `ok` and what the index holds (status 0), or
/// what is wrong with it (status 1).
pub(super) fn verify(path: &Path) -> Result<ExitCode> {
    if path.is_dir() {
        return Err(format!("{}: is a directory, not an index", path.display()).into());
    }
    let result = Index::open(path).and_then(|index| index.verify().map(|()| index));
    match result {
        Ok(index) => {
            let s = index.stats();
            println!(
                "{}: ok ({} hashes, {} pages, format version {})",
                path.display(),
                s.hashes,
                s.pages,
                s.version
            );
            #[cfg(any(feature = "serve", feature = "update"))]
            if !crate::pwned::gzip_ranges::verify(path, &index)? {
                return Ok(ExitCode::from(1));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if matches!(e.kind(), ErrorKind::Io { .. }) => Err(e.into()),
        Err(e) => {
            println!("{}: {e}", path.display());
            Ok(ExitCode::from(1))
        }
    }
}
