//! Which server certificates `update` trusts, and what it says when it
//! refuses one.
//!
//! The system's CA store (rustls-platform-verifier, as reqwest would use
//! it) with the `--ca-cert` certificates added decides, except for one
//! case: a server presenting exactly a certificate given by `--ca-cert`.
//! That is how curl, Go and Python take a self-signed certificate named as
//! the trust anchor (the usual `openssl req -x509` recipe, which marks it
//! `CA:TRUE`), and webpki alone refuses it as "a CA used as an end entity".
//! Such a certificate is accepted while it is within its validity period
//! and holds the name asked for; the handshake's signatures are checked as
//! for any other.
//!
//! Every refusal is put in plain words, with what to do about it
//! ([`refusal`]).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};

/// The system's verifier, and the `--ca-cert` certificates that are also
/// accepted as a server's own.
pub(crate) struct Trust {
    system: Arc<dyn ServerCertVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl Trust {
    /// The system's store with `added` beside it (rustls-platform-verifier:
    /// on Linux `SSL_CERT_FILE` and `SSL_CERT_DIR`, else the distribution's
    /// bundle; elsewhere the operating system's verifier).
    pub(crate) fn new(
        added: Vec<CertificateDer<'static>>,
        provider: Arc<CryptoProvider>,
    ) -> Result<Trust, rustls::Error> {
        let system = if added.is_empty() {
            rustls_platform_verifier::Verifier::new(provider)?
        } else {
            rustls_platform_verifier::Verifier::new_with_extra_roots(added.clone(), provider)?
        };
        Ok(Trust {
            system: Arc::new(system),
            pinned: added,
        })
    }
}

impl fmt::Debug for Trust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trust")
            .field("pinned", &self.pinned.len())
            .finish_non_exhaustive()
    }
}

impl ServerCertVerifier for Trust {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self
            .pinned
            .iter()
            .any(|p| p.as_ref() == end_entity.as_ref())
        {
            check_validity(end_entity, now)?;
            let parsed = ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_name(&parsed, server_name)?;
            return Ok(ServerCertVerified::assertion());
        }
        self.system
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.system.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.system.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.system.supported_verify_schemes()
    }

    fn root_hint_subjects(&self) -> Option<&[DistinguishedName]> {
        self.system.root_hint_subjects()
    }
}

/// Refuses a certificate outside its validity period, as webpki would.
fn check_validity(cert: &[u8], now: UnixTime) -> Result<(), CertificateError> {
    let (not_before, not_after) = validity(cert).ok_or(CertificateError::BadEncoding)?;
    let (not_before, not_after) = (
        UnixTime::since_unix_epoch(Duration::from_secs(not_before)),
        UnixTime::since_unix_epoch(Duration::from_secs(not_after)),
    );
    if now < not_before {
        return Err(CertificateError::NotValidYetContext {
            time: now,
            not_before,
        });
    }
    if now > not_after {
        return Err(CertificateError::ExpiredContext {
            time: now,
            not_after,
        });
    }
    Ok(())
}

/// The validity period of a DER certificate, in seconds since the Unix
/// epoch: `Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0]
/// version OPTIONAL, serialNumber, signature, issuer, validity SEQUENCE {
/// notBefore, notAfter }, … }, … }`.
fn validity(cert: &[u8]) -> Option<(u64, u64)> {
    const SEQUENCE: u8 = 0x30;
    let (SEQUENCE, certificate, _) = element(cert)? else {
        return None;
    };
    let (SEQUENCE, mut tbs, _) = element(certificate)? else {
        return None;
    };
    if tbs.first() == Some(&0xA0) {
        tbs = element(tbs)?.2;
    }
    for _ in 0..3 {
        tbs = element(tbs)?.2;
    }
    let (SEQUENCE, period, _) = element(tbs)? else {
        return None;
    };
    let (tag, not_before, rest) = element(period)?;
    let not_before = time(tag, not_before)?;
    let (tag, not_after, _) = element(rest)?;
    Some((not_before, time(tag, not_after)?))
}

/// One DER element: its tag, its contents and what follows it.
fn element(der: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = der.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let bytes = usize::from(first & 0x7F);
        if bytes == 0 || bytes > 4 || rest.len() < bytes {
            return None;
        }
        let (len, rest) = rest.split_at(bytes);
        let len = len.iter().fold(0usize, |n, &b| n << 8 | usize::from(b));
        (len, rest)
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// A UTCTime (`YYMMDDHHMMSSZ`, years 1950 to 2049) or GeneralizedTime
/// (`YYYYMMDDHHMMSSZ`) in seconds since the Unix epoch.
fn time(tag: u8, text: &[u8]) -> Option<u64> {
    let digits = |range: std::ops::Range<usize>| -> Option<u64> {
        text.get(range)?.iter().try_fold(0u64, |n, &b| {
            b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0'))
        })
    };
    let (year, rest) = match (tag, text.len()) {
        (0x17, 13) => {
            let yy = digits(0..2)?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, 2)
        }
        (0x18, 15) => (digits(0..4)?, 4),
        _ => return None,
    };
    if text.last() != Some(&b'Z') || year < 1970 {
        return None;
    }
    let field = |i: usize| digits(rest + 2 * i..rest + 2 * i + 2);
    let (month, day, hour, minute, second) =
        (field(0)?, field(1)?, field(2)?, field(3)?, field(4)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second)
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar
/// (Howard Hinnant's algorithm), for years from 1970.
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year / 400;
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// What a refused certificate means, in plain words, and what to do: one
/// line. `host` is the server's name as the URL gives it.
pub(crate) fn refusal(why: &CertificateError, host: &str) -> String {
    use CertificateError as E;
    let server = format!("the certificate of {host}");
    match why {
        E::UnknownIssuer => format!(
            "{server} is signed by a CA this machine does not trust (neither in the \
             system's store nor given by --ca-cert): give that CA's certificate with \
             --ca-cert FILE (for `serve --tls-ca-dir DIR`: DIR/ca.pem)"
        ),
        E::Expired | E::ExpiredContext { .. } => {
            let when = match why {
                E::ExpiredContext { time, not_after } => {
                    format!(" on {} (it is now {})", date(*not_after), date(*time))
                }
                _ => String::new(),
            };
            format!(
                "{server} expired{when}: renew it on the server (`serve --tls-ca-dir` \
                 renews its own), or set this machine's clock right"
            )
        }
        E::NotValidYet | E::NotValidYetContext { .. } => {
            let when = match why {
                E::NotValidYetContext { time, not_before } => {
                    format!(" until {} (it is now {})", date(*not_before), date(*time))
                }
                _ => String::new(),
            };
            format!(
                "{server} is not valid yet{when}: set the clock right on this machine or \
                 on the one that made the certificate"
            )
        }
        E::NotValidForName | E::NotValidForNameContext { .. } => {
            let held = match why {
                E::NotValidForNameContext { presented, .. } if !presented.is_empty() => {
                    let names: Vec<&str> = presented.iter().map(|n| plain_name(n)).collect();
                    format!(" (it holds {})", names.join(", "))
                }
                E::NotValidForNameContext { .. } => " (it holds no name)".into(),
                _ => String::new(),
            };
            format!(
                "{server} is not made for the name {host}{held}: use a name it holds in \
                 --base-url, or make the certificate for {host} \
                 (`serve --tls-ca-dir DIR --tls-name {host}`)"
            )
        }
        E::InvalidPurpose | E::InvalidPurposeContext { .. } => format!(
            "{server} is not for TLS servers (its extended key usage lacks serverAuth): \
             make one that has it"
        ),
        E::BadSignature => format!(
            "{server} does not carry a valid signature of the CA it names: the certificate \
             and the CA trusted for it do not belong together; give the CA that signed it"
        ),
        E::Revoked => format!("{server} was revoked by its CA: the server needs a new one"),
        E::BadEncoding => format!("{server} is damaged (not valid DER): make it again"),
        E::Other(other) if ca_used_as_end_entity(other) => format!(
            "{host} presents a CA certificate (CA:TRUE, as `openssl req -x509` makes) as \
             its own, and --ca-cert does not give exactly that certificate: give it with \
             --ca-cert to trust it as it is, or serve a certificate signed by a CA \
             (`serve --tls-ca-dir DIR` makes both)"
        ),
        #[allow(deprecated)]
        E::UnsupportedSignatureAlgorithm
        | E::UnsupportedSignatureAlgorithmContext { .. }
        | E::UnsupportedSignatureAlgorithmForPublicKeyContext { .. } => format!(
            "{server} is signed with an algorithm this client does not accept: make it \
             with ECDSA (P-256, P-384), Ed25519 or RSA of 2048 bits or more"
        ),
        other => format!("{server} was refused ({other})"),
    }
}

/// Whether webpki refused a certificate marked `CA:TRUE` that a server
/// presented as its own.
fn ca_used_as_end_entity(other: &rustls::OtherError) -> bool {
    let error: &(dyn std::error::Error + 'static) = &*other.0;
    matches!(
        error.downcast_ref::<webpki::Error>(),
        Some(webpki::Error::CaUsedAsEndEntity)
    )
}

/// `DnsName("example.com")` or `IpAddress(127.0.0.1)`, as webpki shows a
/// certificate's names, as the name alone.
fn plain_name(shown: &str) -> &str {
    for (start, end) in [("DnsName(\"", "\")"), ("IpAddress(", ")")] {
        if let Some(name) = shown.strip_prefix(start).and_then(|s| s.strip_suffix(end)) {
            return name;
        }
    }
    shown
}

/// A certificate time as RFC 3339, to the second (years up to 9999, as
/// certificates write them).
fn date(time: UnixTime) -> String {
    const LAST: u64 = 253_402_300_799;
    let at: SystemTime = UNIX_EPOCH + Duration::from_secs(time.as_secs().min(LAST));
    humantime::format_rfc3339_seconds(at).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_times_are_read_as_webpki_reads_them() {
        assert_eq!(time(0x17, b"700101000000Z"), Some(0));
        assert_eq!(time(0x17, b"491231235959Z"), Some(2_524_607_999));
        assert_eq!(time(0x17, b"500101000000Z"), None, "1950");
        assert_eq!(time(0x18, b"20240229120000Z"), Some(1_709_208_000));
        assert_eq!(time(0x18, b"99991231235959Z"), Some(253_402_300_799));
        for bad in [
            &b"2024022912000Z"[..],
            b"20241329120000Z",
            b"2024022912000AZ",
            b"20240229120000+",
        ] {
            assert_eq!(time(0x18, bad), None, "{bad:?}");
        }
        assert_eq!(time(0x04, b"700101000000Z"), None, "not a time");
    }

    #[test]
    fn elements_never_reach_past_their_input() {
        assert_eq!(
            element(&[0x30, 0x02, 1, 2, 3]),
            Some((0x30, &[1, 2][..], &[3][..]))
        );
        assert_eq!(element(&[0x30, 0x03, 1, 2]), None);
        assert_eq!(
            element(&[0x30, 0x81, 0x01, 9]),
            Some((0x30, &[9][..], &[][..]))
        );
        assert_eq!(
            element(&[0x30, 0x85, 0, 0, 0, 0, 1]),
            None,
            "5 length bytes"
        );
        assert_eq!(element(&[0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF]), None);
        assert_eq!(element(&[0x30]), None);
        assert_eq!(validity(&[0x30, 0x00]), None);
    }

    #[test]
    fn names_are_shown_plain() {
        assert_eq!(plain_name("DnsName(\"localhost\")"), "localhost");
        assert_eq!(plain_name("IpAddress(127.0.0.1)"), "127.0.0.1");
        assert_eq!(plain_name("DirectoryName"), "DirectoryName");
    }
}
