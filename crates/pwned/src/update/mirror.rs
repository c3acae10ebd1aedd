//! A seekless mirror as the upstream: which corpus it serves, in one
//! request (`GET {base}/identity`), and the delta bundles that lead there
//! (`GET {base}/bundles/{identity}`), so that a replica refreshes with one
//! request when nothing changed and one download of what changed when
//! something did.
//!
//! [`refresh`] asks the mirror's identity for the index's kind: the same
//! as the index's, and nothing is fetched or written; else it fetches the
//! bundle from the index's identity into a file beside the index
//! (`.NAME.bundle-download`), applies it as `update --from-bundle` does
//! (checked whole first, the index replaced only by a complete, checked
//! result) and goes on from the identity it made, until the index holds
//! the mirror's. Where no bundle leads there (no `/identity`, no bundle
//! from the index's identity, a bundle refused), the caller refreshes
//! range by range, as from any other server.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use reqwest::StatusCode;

use crate::bundle::{BundleHeader, BundleReader};
use crate::error::{Error, ErrorKind, Result};
use crate::format::hash::Kind;
use crate::read::identity::{Digests, identity_hex, parse_identity_hex};
use crate::read::index::Index;
use crate::update::bundle::{bundle_name, is_bundle_dir};
use crate::update::client::explain;
use crate::update::journal::{UpdatePath, UpdateSummary};
use crate::update::options::{DEFAULT_BASE_URL, UpdateOptions, UpdateProgress};

/// Bundles applied in one refresh at most: a chain longer than this is
/// more likely a loop than a history.
const MAX_STEPS: u32 = 64;

/// What the mirror says of the index of one kind it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Upstream {
    pub(crate) identity: [u8; 32],
    pub(crate) hashes: u64,
    pub(crate) min_count: u64,
}

/// The outcome of [`refresh`].
pub(crate) enum Refreshed {
    /// The index holds the mirror's identity (already, or after bundles).
    Done(UpdateSummary),
    /// No bundle leads there: refresh range by range; why, for the summary
    /// (`None`: the upstream is not a seekless mirror, nothing to say).
    Ranges(Option<String>),
}

/// Whether to ask the upstream for its identity at all: not HIBP (which has
/// none), not when every range is to be fetched whole.
pub(crate) fn applies(options: &UpdateOptions) -> bool {
    // A bundle file asked for (`bundle_out` not a directory) is the diff
    // of one refresh: the per-range path writes it.
    options.from_bundle.is_none()
        && options.bundle_out.as_deref().is_none_or(is_bundle_dir)
        && !options.full
        && options.base_url.trim_end_matches('/') != DEFAULT_BASE_URL
}

/// The identity of `path`'s index (recorded, or computed from its pages),
/// and its hashes and minimum count; for no index, the identity of an
/// empty one.
pub(crate) fn own(path: &Path, kind: Kind) -> Result<(Option<Index>, [u8; 32])> {
    match Index::open(path) {
        Ok(index) => {
            if index.kind() != kind {
                return Err(ErrorKind::WrongKind {
                    found: index.kind(),
                    wanted: kind,
                }
                .into());
            }
            let identity = index.identity()?;
            Ok((Some(index), identity))
        }
        Err(e) if matches!(e.kind(), ErrorKind::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound) => {
            Ok((None, Digests::empty(kind).identity(kind)))
        }
        Err(e) => Err(e),
    }
}

/// Asks `{base}/identity` for the index of `kind` the mirror serves:
/// `Ok(None)` when the upstream is no seekless mirror (or does not know
/// its identity yet), with why.
pub(crate) async fn ask_identity(
    client: &reqwest::Client,
    base: &str,
    kind: Kind,
) -> std::result::Result<Upstream, String> {
    let url = format!("{base}/identity");
    let response = client
        .get(&url)
        .send()
        .await
        .map_err(|e| format!("{url}: {}", explain(&e)))?;
    let status = response.status();
    if status != StatusCode::OK {
        return Err(format!("{url} answered {status}: not a seekless mirror"));
    }
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("{url}: {}", explain(&e)))?;
    parse_identity(&body, kind).map_err(|what| format!("{url}: {what}"))
}

/// The member of `kind` in an `/identity` document.
fn parse_identity(body: &[u8], kind: Kind) -> std::result::Result<Upstream, String> {
    let doc: serde_json::Value = serde_json::from_slice(body)
        .map_err(|_| "not the JSON a seekless mirror answers".to_string())?;
    let name = match kind {
        Kind::Sha1 => "sha1",
        Kind::Ntlm => "ntlm",
    };
    let member = doc
        .get(name)
        .ok_or_else(|| format!("the mirror serves no {kind} index"))?;
    let identity = match member.get("identity") {
        Some(serde_json::Value::String(hex)) => parse_identity_hex(hex)
            .ok_or_else(|| format!("identity {hex:?} is not 64 hex digits"))?,
        Some(serde_json::Value::Null) => {
            return Err("the mirror does not know its identity yet (still verifying)".into());
        }
        _ => return Err("no identity in the answer".into()),
    };
    let number = |field: &str| {
        member
            .get(field)
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| format!("no {field} in the answer"))
    };
    Ok(Upstream {
        identity,
        hashes: number("hashes")?,
        min_count: number("min_count")?,
    })
}

/// What fetching a bundle came to.
enum Fetched {
    /// Saved whole at the download path: its bytes.
    Saved(u64),
    /// The mirror holds none from that identity.
    NotFound,
}

/// Fetches `{base}/bundles/{from}` into `to`: 404 is [`Fetched::NotFound`],
/// any other answer than 200, or a body shorter than its length, an
/// error that says so.
async fn fetch_bundle(
    client: &reqwest::Client,
    base: &str,
    from: &[u8; 32],
    to: &Path,
) -> std::result::Result<Fetched, String> {
    let url = format!("{base}/bundles/{}", identity_hex(from));
    let mut response = client
        .get(&url)
        .send()
        .await
        .map_err(|e| format!("{url}: {}", explain(&e)))?;
    match response.status() {
        StatusCode::OK => {}
        StatusCode::NOT_FOUND => return Ok(Fetched::NotFound),
        status => return Err(format!("{url} answered {status}")),
    }
    let length = response.content_length();
    let mut file = File::create(to).map_err(|e| format!("{}: {e}", to.display()))?;
    let mut received = 0u64;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                received += chunk.len() as u64;
                file.write_all(&chunk)
                    .map_err(|e| format!("{}: {e}", to.display()))?;
            }
            Ok(None) => break,
            Err(e) => return Err(format!("{url}: {}", explain(&e))),
        }
    }
    if length.is_some_and(|length| length != received) {
        return Err(format!(
            "{url}: the answer ended after {received} of {} bytes",
            length.unwrap_or(0)
        ));
    }
    file.sync_all()
        .map_err(|e| format!("{}: {e}", to.display()))?;
    Ok(Fetched::Saved(received))
}

/// Brings `path` to the identity the mirror at `options.base_url` serves,
/// by its bundles (see the module documentation).
pub(crate) fn refresh(
    path: &Path,
    options: &UpdateOptions,
    progress: &dyn UpdateProgress,
) -> Result<Refreshed> {
    let started = std::time::Instant::now();
    let base = options.base_url.trim_end_matches('/').to_string();
    let client = crate::update::client::build(options)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io(None, e))?;
    let (index, mut at) = own(path, options.kind)?;
    let held = index.as_ref().map_or(1, |index| index.stats().min_count);
    let hashes = index.as_ref().map_or(0, Index::len);
    let created = index.is_none();
    drop(index);
    let mut target = match runtime.block_on(ask_identity(&client, &base, options.kind)) {
        Ok(upstream) => upstream,
        Err(why) => return Ok(Refreshed::Ranges(Some(why))),
    };
    if target.min_count != held || options.min_count.is_some_and(|m| m != held) {
        return Ok(Refreshed::Ranges(Some(format!(
            "the mirror's index keeps hashes seen at least {} times, this one {held}: bundles join only indexes of one minimum",
            target.min_count
        ))));
    }
    let mut summary = UpdateSummary {
        hashes,
        min_count: held,
        ..UpdateSummary::default()
    };
    if target.identity == at {
        // A journal whose partial index is gone is what a run killed after
        // its rename left (a running update holds its partial index).
        let (partial, journal) = crate::update::files::beside(path)?;
        if journal.exists() && !partial.exists() {
            let _ = std::fs::remove_file(&journal);
        }
        summary.path = UpdatePath::Current;
        summary.seconds = started.elapsed().as_secs_f64();
        return Ok(Refreshed::Done(summary));
    }
    let download = download_path(path)?;
    let mut applied = 0u32;
    let mut asked_again = false;
    let mut total = UpdateSummary {
        created,
        ..UpdateSummary::default()
    };
    loop {
        if at == target.identity {
            // The mirror may have moved on while the chain was followed:
            // one more question, after the last step.
            if asked_again {
                break;
            }
            asked_again = true;
            match runtime.block_on(ask_identity(&client, &base, options.kind)) {
                Ok(upstream) if upstream.identity != at => {
                    target = upstream;
                    continue;
                }
                _ => break,
            }
        }
        if applied == MAX_STEPS {
            return Ok(Refreshed::Ranges(Some(format!(
                "{MAX_STEPS} bundles applied and the mirror's identity not reached"
            ))));
        }
        let fetched = runtime.block_on(fetch_bundle(&client, &base, &at, &download));
        let bytes = match fetched {
            Ok(Fetched::Saved(bytes)) => bytes,
            Ok(Fetched::NotFound) if !asked_again && applied > 0 => {
                // The mirror may have moved on while this one followed its
                // chain: ask again where it is now.
                asked_again = true;
                match runtime.block_on(ask_identity(&client, &base, options.kind)) {
                    Ok(upstream) if upstream.identity != target.identity => {
                        target = upstream;
                        continue;
                    }
                    _ => {
                        return Ok(Refreshed::Ranges(Some(format!(
                            "the mirror holds no bundle from identity {}",
                            identity_hex(&at)
                        ))));
                    }
                }
            }
            Ok(Fetched::NotFound) => {
                return Ok(Refreshed::Ranges(Some(format!(
                    "the mirror holds no bundle from identity {}",
                    identity_hex(&at)
                ))));
            }
            Err(why) => {
                let _ = std::fs::remove_file(&download);
                return Ok(Refreshed::Ranges(Some(why)));
            }
        };
        // The bundle must be the step asked for before anything is done
        // with it (it is checked whole when applied).
        let header = match bundle_header(&download) {
            Ok(header) if header.old_identity == at && header.kind == options.kind => header,
            Ok(header) => {
                let _ = std::fs::remove_file(&download);
                return Ok(Refreshed::Ranges(Some(format!(
                    "asked for the bundle from identity {}, the mirror answered one from {} ({})",
                    identity_hex(&at),
                    identity_hex(&header.old_identity),
                    header.kind
                ))));
            }
            Err(e) => {
                let _ = std::fs::remove_file(&download);
                return Ok(Refreshed::Ranges(Some(format!(
                    "a bundle from the mirror was refused: {e}"
                ))));
            }
        };
        let step = UpdateOptions {
            from_bundle: Some(download.clone()),
            bundle_out: None,
            ..options.clone()
        };
        let done = match crate::update::run::run(path, &step, progress, UpdatePath::BundleFile) {
            Ok(done) => done,
            Err(e) => {
                let _ = std::fs::remove_file(&download);
                return match e.kind() {
                    // Nothing was changed: the per-range path is safe.
                    ErrorKind::BadBundle { .. } | ErrorKind::WrongKind { .. } => {
                        Ok(Refreshed::Ranges(Some(format!(
                            "a bundle from the mirror was refused: {e}"
                        ))))
                    }
                    _ => Err(e),
                };
            }
        };
        keep_or_remove(
            &download,
            options.bundle_out.as_deref(),
            &at,
            &header.new_identity,
        )?;
        at = header.new_identity;
        applied += 1;
        total.received += bytes;
        total.changed += done.changed;
        total.not_modified = done.not_modified;
        total.fetched = done.fetched;
        total.checked = done.checked;
        total.added += done.added;
        total.removed += done.removed;
        total.counts_changed += done.counts_changed;
        total.hashes = done.hashes;
        total.bytes = done.bytes;
        total.min_count = done.min_count;
    }
    total.path = UpdatePath::Bundles { count: applied };
    total.seconds = started.elapsed().as_secs_f64();
    Ok(Refreshed::Done(total))
}

/// The header of the bundle file at `path`.
fn bundle_header(path: &Path) -> Result<BundleHeader> {
    let file = File::open(path).map_err(|e| Error::io(path.to_path_buf(), e))?;
    Ok(BundleReader::new(file)?.header().clone())
}

/// Where a bundle is downloaded: beside the index, hidden.
fn download_path(path: &Path) -> Result<PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::io(path.to_path_buf(), std::io::Error::other("not a file name")))?;
    let mut hidden = std::ffi::OsString::from(".");
    hidden.push(name);
    hidden.push(".bundle-download");
    Ok(path.with_file_name(hidden))
}

/// A bundle applied: moved into `--bundle-out DIR` (so this replica
/// serves it to others), else removed.
fn keep_or_remove(
    download: &Path,
    out: Option<&Path>,
    from: &[u8; 32],
    to: &[u8; 32],
) -> Result<()> {
    let Some(dir) = out.filter(|out| is_bundle_dir(out)) else {
        return std::fs::remove_file(download).map_err(|e| Error::io(download.to_path_buf(), e));
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.to_path_buf(), e))?;
    let name = bundle_name(from, to);
    let kept = dir.join(&name);
    match crate::tmpfile::replace(download, &kept) {
        Ok(()) => Ok(()),
        // DIR on another file system than the index: copied in under a
        // name `serve --bundles` passes over, renamed when complete.
        Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {
            let partial = dir.join(format!(".{name}.partial"));
            let copied = std::fs::copy(download, &partial)
                .and_then(|_| File::open(&partial)?.sync_all())
                .and_then(|()| crate::tmpfile::replace(&partial, &kept));
            if let Err(e) = copied {
                let _ = std::fs::remove_file(&partial);
                return Err(Error::io(kept, e));
            }
            std::fs::remove_file(download).map_err(|e| Error::io(download.to_path_buf(), e))
        }
        Err(e) => Err(Error::io(kept, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_documents_are_read_strictly() {
        let hex = "ab".repeat(32);
        let doc =
            format!(r#"{{"sha1":{{"identity":"{hex}","hashes":5,"min_count":1,"updated":null}}}}"#);
        let up = parse_identity(doc.as_bytes(), Kind::Sha1).unwrap();
        assert_eq!((up.identity, up.hashes, up.min_count), ([0xab; 32], 5, 1));
        let e = parse_identity(doc.as_bytes(), Kind::Ntlm).unwrap_err();
        assert!(
            e.contains("no NTLM index") || e.contains("no ntlm index"),
            "{e}"
        );
        for (body, says) in [
            ("<html>not here</html>", "not the JSON"),
            (
                r#"{"sha1":{"identity":null,"hashes":5,"min_count":1}}"#,
                "does not know",
            ),
            (
                r#"{"sha1":{"identity":"abc","hashes":5,"min_count":1}}"#,
                "64 hex",
            ),
            (r#"{"sha1":{"hashes":5,"min_count":1}}"#, "no identity"),
            (
                &format!(r#"{{"sha1":{{"identity":"{hex}","min_count":1}}}}"#),
                "no hashes",
            ),
        ] {
            let e = parse_identity(body.as_bytes(), Kind::Sha1).unwrap_err();
            assert!(e.contains(says), "{body}: {e}");
        }
    }

    #[test]
    fn bundle_names_carry_both_identities() {
        assert_eq!(
            bundle_name(&[0x01; 32], &[0xfe; 32]),
            "0101010101010101-fefefefefefefefe.bundle"
        );
        assert_eq!(parse_identity_hex(&"0A".repeat(32)), Some([0x0a; 32]));
        assert_eq!(parse_identity_hex(&"0g".repeat(32)), None);
    }
}
