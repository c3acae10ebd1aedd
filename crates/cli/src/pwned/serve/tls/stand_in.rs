//! `serve --tls-ca-dir DIR --tls-name NAME…`: HTTPS for names that
//! clients hardcode (`api.pwnedpasswords.com`), once DNS sends the name
//! here and the clients trust a CA of this server's. The CA is made in DIR
//! on the first start ([`Authority`]) and kept for every later one; the
//! server certificate it signs for the names is kept there too
//! (`server.pem`, `server.key`), made again when the names change, and
//! renewed a third of its lifetime before it ends: new files, which the
//! watcher of [`Tls`](super::Tls) serves to new connections as it serves
//! any replaced certificate.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use rcgen::SanType;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, DnsName};

use super::authority::{Authority, san_text};
use super::files;
use seekless_pwned::rfc3339;

/// The server certificate, in DIR.
pub const SERVER_CERT: &str = "server.pem";
/// Its key, in DIR.
pub const SERVER_KEY: &str = "server.key";
/// How long a server certificate is valid: 90 days, as ACME CAs issue.
pub const LIFETIME: Duration = Duration::from_secs(90 * 86_400);
/// How long a failed renewal waits before it is tried again.
const RETRY: Duration = Duration::from_secs(60);

/// A CA in a directory, and the server certificate it keeps signing.
#[derive(Debug)]
pub struct StandIn {
    authority: Authority,
    names: Vec<SanType>,
    lifetime: Duration,
    cert: PathBuf,
    key: PathBuf,
    schedule: Mutex<Schedule>,
}

/// When the certificate is renewed next, and not before when a renewal
/// failed.
#[derive(Debug)]
struct Schedule {
    renew_at: SystemTime,
    next_try: SystemTime,
}

impl StandIn {
    /// The CA in `dir` (made first when there is none: `dir` too) and a
    /// certificate for `names` valid for `lifetime`: the one in `dir` when
    /// it is this CA's for exactly these names and not due for renewal,
    /// else a new one. An error is one line naming the file or flag.
    pub fn open(dir: &Path, names: &[String], lifetime: Duration) -> Result<StandIn, String> {
        let names = parse_names(names)?;
        if !files::exists(dir)? {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("{}: cannot make the CA directory ({e})", dir.display()))?;
        } else if !dir.is_dir() {
            return Err(format!(
                "{}: not a directory (--tls-ca-dir names a directory for the CA)",
                dir.display()
            ));
        }
        files::check_writable(dir)?;
        let authority = Authority::open_or_create(dir)?;
        if authority.created {
            eprintln!(
                "seekless: made a new CA in {}: clients must trust {} (docs/stand-in.md)",
                dir.display(),
                authority.path.display()
            );
        }
        let stand_in = StandIn {
            authority,
            names,
            lifetime,
            cert: dir.join(SERVER_CERT),
            key: dir.join(SERVER_KEY),
            schedule: Mutex::new(Schedule {
                renew_at: SystemTime::UNIX_EPOCH,
                next_try: SystemTime::UNIX_EPOCH,
            }),
        };
        let now = SystemTime::now();
        let kept = stand_in
            .current()
            .map(|not_after| stand_in.due(not_after))
            .filter(|&renew_at| renew_at > now);
        let renew_at = match kept {
            Some(renew_at) => renew_at,
            None => stand_in.issue(now)?,
        };
        stand_in.lock().renew_at = renew_at;
        files::warn_if_readable_by_others(&stand_in.key);
        Ok(stand_in)
    }

    /// The server certificate's file and its key's.
    pub fn files(&self) -> (&Path, &Path) {
        (&self.cert, &self.key)
    }

    /// The CA's certificate, the file clients must trust.
    pub fn authority(&self) -> &Path {
        &self.authority.path
    }

    /// Writes a new certificate when the one served is due for renewal
    /// (or a failed renewal is due to be tried again): `None` when it is
    /// not due, else whether the new files are written.
    pub fn renew_if_due(&self) -> Option<Result<(), String>> {
        let now = SystemTime::now();
        let mut schedule = self.lock();
        if now < schedule.renew_at || now < schedule.next_try {
            return None;
        }
        Some(match self.issue(now) {
            Ok(renew_at) => {
                schedule.renew_at = renew_at;
                Ok(())
            }
            Err(e) => {
                schedule.next_try = now + RETRY;
                Err(format!(
                    "the certificate was not renewed: {e}; trying again in {} s",
                    RETRY.as_secs()
                ))
            }
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Schedule> {
        self.schedule.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The end of the validity of the certificate in the directory, when
    /// it is one to keep serving: this CA's, for exactly these names, its
    /// key beside it.
    fn current(&self) -> Option<SystemTime> {
        let der = CertificateDer::from_pem_file(&self.cert).ok()?;
        let key = std::fs::read_to_string(&self.key).ok()?;
        self.authority.issued(&der, &key, &self.names)
    }

    /// Signs and writes a new certificate (key first: a pair that does not
    /// match is made again on the next start); when to renew it.
    fn issue(&self, now: SystemTime) -> Result<SystemTime, String> {
        let signed = self.authority.sign(&self.names, self.lifetime)?;
        files::write(&self.key, signed.key.as_bytes(), true)?;
        files::write(&self.cert, signed.cert.as_bytes(), false)?;
        let names: Vec<String> = self.names.iter().map(san_text).collect();
        eprintln!(
            "seekless: a new certificate for {} in {}, valid until {}",
            names.join(", "),
            self.cert.display(),
            rfc3339(signed.not_after)
        );
        if signed.not_after == self.authority.not_after() {
            eprintln!(
                "seekless: warning: the CA in {} ends on {}, and the certificates it \
                 signs with it: make a new CA (move the directory away) and have clients \
                 trust it before then",
                self.authority.path.display(),
                rfc3339(signed.not_after)
            );
        }
        // Not sooner than a third of a lifetime from now, though: a
        // certificate the CA's own end cut short is not made again every
        // second.
        let remaining = signed.not_after.duration_since(now).unwrap_or_default();
        let soonest = now + (self.lifetime / 3).min(remaining);
        Ok(self.due(signed.not_after).max(soonest))
    }

    /// When a certificate valid until `not_after` is due for renewal: a
    /// third of a lifetime before it ends.
    fn due(&self, not_after: SystemTime) -> SystemTime {
        not_after
            .checked_sub(self.lifetime / 3)
            .unwrap_or(SystemTime::UNIX_EPOCH)
    }
}

/// The names of `--tls-name`, checked: an IP address, or a DNS name
/// (a leading `*.` for a wildcard); repeated ones once.
pub fn parse_names(names: &[String]) -> Result<Vec<SanType>, String> {
    let mut parsed: Vec<SanType> = Vec::new();
    for name in names {
        let text = name.trim();
        let san = if let Ok(ip) = text.parse::<std::net::IpAddr>() {
            SanType::IpAddress(ip)
        } else {
            let lower = text.to_ascii_lowercase();
            let bare = lower.strip_prefix("*.").unwrap_or(&lower);
            let valid = !bare.is_empty()
                && !bare.contains('*')
                && bare.parse::<std::net::IpAddr>().is_err()
                && DnsName::try_from(bare).is_ok();
            match lower.clone().try_into() {
                Ok(ia5) if valid => SanType::DnsName(ia5),
                _ => {
                    return Err(format!(
                        "--tls-name {name:?}: not a DNS name or an IP address"
                    ));
                }
            }
        };
        if !parsed.contains(&san) {
            parsed.push(san);
        }
    }
    if parsed.is_empty() {
        return Err("--tls-ca-dir needs at least one --tls-name".into());
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_dns_names_or_ip_addresses() {
        let given: Vec<String> = [
            "API.pwnedpasswords.com",
            "api.pwnedpasswords.com",
            "127.0.0.1",
            "::1",
            "*.example.com",
        ]
        .map(String::from)
        .to_vec();
        let texts: Vec<String> = parse_names(&given).unwrap().iter().map(san_text).collect();
        assert_eq!(
            texts,
            [
                "api.pwnedpasswords.com",
                "127.0.0.1",
                "::1",
                "*.example.com"
            ]
        );
        for bad in ["", "a b", "exa*mple.com", "*", "*.", "héllo.example", "-"] {
            let e = parse_names(&[bad.to_string()]).unwrap_err();
            assert!(
                e.contains("not a DNS name or an IP address"),
                "{bad:?}: {e}"
            );
        }
    }
}
