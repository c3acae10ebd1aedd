//! The stand-in's certificate authority: made once in a directory
//! (`ca.pem`, and `ca.key` readable by its owner only), read back on
//! every later start, and the server certificates it signs.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PublicKeyData, SanType,
};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::FromDer;

use super::files;
use seekless_pwned::rfc3339;

/// The CA's certificate, the file to distribute.
pub const CA_CERT: &str = "ca.pem";
/// The CA's private key.
pub const CA_KEY: &str = "ca.key";
/// How long a new CA is valid: ten years.
const CA_LIFETIME: Duration = Duration::from_secs(3652 * 86_400);
/// How far back a certificate's validity starts, for clocks a little
/// behind this one.
const BACKDATE: Duration = Duration::from_secs(3600);

/// A CA that signs server certificates.
#[derive(Debug)]
pub struct Authority {
    issuer: Issuer<'static, KeyPair>,
    /// Its certificate (DER), which signatures are checked against.
    der: CertificateDer<'static>,
    not_after: SystemTime,
    /// Where its certificate is.
    pub path: PathBuf,
    /// Whether it was made by this start.
    pub created: bool,
}

/// A server certificate and its key, as PEM, and the end of its validity.
pub struct Signed {
    pub cert: String,
    pub key: String,
    pub not_after: SystemTime,
}

impl Authority {
    /// The CA in `dir`, made there first when the directory holds none. An
    /// error names the file at fault and says what to do.
    pub fn open_or_create(dir: &Path) -> Result<Authority, String> {
        let (cert, key) = (dir.join(CA_CERT), dir.join(CA_KEY));
        match (files::exists(&cert)?, files::exists(&key)?) {
            (false, false) => Authority::create(dir),
            (true, true) => Authority::load(cert, &key),
            (true, false) => Err(format!(
                "{}: missing: the key of the CA in {} is gone; put it back, or move {} \
                 away to make a new CA (which every client must then trust anew)",
                key.display(),
                cert.display(),
                dir.display()
            )),
            (false, true) => Err(format!(
                "{}: there is no {CA_CERT} beside it (a start that stopped half way?): \
                 put the CA's certificate back, or remove the key to make a new CA",
                key.display()
            )),
        }
    }

    /// A new CA, its key written first (`ca.pem`, written last, is what
    /// says the CA is complete).
    fn create(dir: &Path) -> Result<Authority, String> {
        let key = KeyPair::generate().map_err(|e| format!("cannot make a key: {e}"))?;
        let now = SystemTime::now();
        let mut params = CertificateParams::default();
        let id: String = params
            .key_identifier(&key)
            .iter()
            .take(4)
            .map(|b| format!("{b:02x}"))
            .collect();
        let made = rfc3339(now);
        let mut name = DistinguishedName::new();
        name.push(
            DnType::CommonName,
            format!("seekless stand-in CA {} {id}", &made[..10]),
        );
        name.push(DnType::OrganizationName, "seekless");
        params.distinguished_name = name;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.not_before = (now - BACKDATE).into();
        let not_after = now + CA_LIFETIME;
        params.not_after = not_after.into();
        let cert = params
            .self_signed(&key)
            .map_err(|e| format!("cannot make the CA's certificate: {e}"))?;
        files::write(&dir.join(CA_KEY), key.serialize_pem().as_bytes(), true)?;
        let path = dir.join(CA_CERT);
        files::write(&path, cert.pem().as_bytes(), false)?;
        Ok(Authority {
            der: cert.der().clone(),
            issuer: Issuer::new(params, key),
            not_after: whole_seconds(not_after),
            path,
            created: true,
        })
    }

    /// The CA of `cert` and `key`, checked: a CA certificate, the key its
    /// own, not expired.
    fn load(cert: PathBuf, key: &Path) -> Result<Authority, String> {
        let named = |path: &Path, what: String| format!("{}: {what}", path.display());
        let der = CertificateDer::from_pem_file(&cert)
            .map_err(|e| named(&cert, format!("not a PEM certificate ({e})")))?;
        let (_, parsed) = X509Certificate::from_der(&der)
            .map_err(|e| named(&cert, format!("not a valid certificate ({e})")))?;
        if !parsed.is_ca() {
            return Err(named(
                &cert,
                "not a CA certificate (no CA:TRUE): the directory must hold a CA's \
                 certificate and key, or nothing (a new CA is then made)"
                    .into(),
            ));
        }
        let not_after = time(parsed.validity().not_after.timestamp());
        if not_after <= SystemTime::now() {
            return Err(named(
                &cert,
                format!(
                    "the CA expired on {}: move its directory away to make a new CA, \
                     and have clients trust the new one",
                    rfc3339(not_after)
                ),
            ));
        }
        let pem = std::fs::read_to_string(key).map_err(|e| named(key, e.to_string()))?;
        let signing = KeyPair::from_pem(&pem).map_err(|e| {
            named(
                key,
                format!(
                    "not a private key to sign with ({e}): PKCS#8 ECDSA P-256 or P-384, \
                     Ed25519 or RSA, PEM"
                ),
            )
        })?;
        if signing.subject_public_key_info() != parsed.public_key().raw {
            return Err(named(
                key,
                format!(
                    "does not match the certificate in {}: put that CA's own key back, \
                     or move the directory away to make a new CA",
                    cert.display()
                ),
            ));
        }
        files::warn_if_readable_by_others(key);
        let issuer = Issuer::from_ca_cert_der(&der, signing)
            .map_err(|e| named(&cert, format!("cannot sign with this CA ({e})")))?;
        Ok(Authority {
            issuer,
            der: der.into_owned(),
            not_after,
            path: cert,
            created: false,
        })
    }

    /// A new server certificate for `names` (its first the subject's
    /// common name), valid for `lifetime` and not past the CA's own end.
    pub fn sign(&self, names: &[SanType], lifetime: Duration) -> Result<Signed, String> {
        let now = SystemTime::now();
        if self.not_after <= now {
            return Err(format!(
                "{}: the CA expired on {}: move its directory away to make a new CA",
                self.path.display(),
                rfc3339(self.not_after)
            ));
        }
        let key = KeyPair::generate().map_err(|e| format!("cannot make a key: {e}"))?;
        let mut params = CertificateParams::default();
        params.subject_alt_names = names.to_vec();
        let mut subject = DistinguishedName::new();
        if let Some(first) = names.first() {
            subject.push(DnType::CommonName, san_text(first));
        }
        params.distinguished_name = subject;
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        params.not_before = (now - BACKDATE).into();
        let not_after = whole_seconds((now + lifetime).min(self.not_after));
        params.not_after = not_after.into();
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(|e| format!("cannot sign a certificate: {e}"))?;
        Ok(Signed {
            cert: cert.pem(),
            key: key.serialize_pem(),
            not_after,
        })
    }

    /// When the certificate `der` with its key `key` (PEM) is one this CA
    /// signed for exactly `names`, the end of its validity.
    pub fn issued(&self, der: &[u8], key: &str, names: &[SanType]) -> Option<SystemTime> {
        let (_, ca) = X509Certificate::from_der(&self.der).ok()?;
        let (_, cert) = X509Certificate::from_der(der).ok()?;
        cert.verify_signature(Some(ca.public_key())).ok()?;
        let key = KeyPair::from_pem(key).ok()?;
        if key.subject_public_key_info() != cert.public_key().raw {
            return None;
        }
        let held: Vec<String> = cert
            .subject_alternative_name()
            .ok()??
            .value
            .general_names
            .iter()
            .map(|name| match *name {
                GeneralName::DNSName(dns) => Some(dns.to_ascii_lowercase()),
                GeneralName::IPAddress(&[a, b, c, d]) => {
                    Some(std::net::IpAddr::from([a, b, c, d]).to_string())
                }
                GeneralName::IPAddress(bytes) => {
                    let octets: [u8; 16] = bytes.try_into().ok()?;
                    Some(std::net::IpAddr::from(octets).to_string())
                }
                _ => None,
            })
            .collect::<Option<_>>()?;
        let wanted: Vec<String> = names.iter().map(san_text).collect();
        (sorted(held) == sorted(wanted)).then(|| time(cert.validity().not_after.timestamp()))
    }

    /// When the CA's own validity ends.
    pub fn not_after(&self) -> SystemTime {
        self.not_after
    }
}

/// A name of a certificate as text: a DNS name in lower case, or an IP
/// address.
pub fn san_text(name: &SanType) -> String {
    match name {
        SanType::DnsName(dns) => dns.as_str().to_ascii_lowercase(),
        SanType::IpAddress(ip) => ip.to_string(),
        other => format!("{other:?}"),
    }
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names.dedup();
    names
}

/// Seconds since the Unix epoch (a certificate's time) as a SystemTime.
fn time(seconds: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(u64::try_from(seconds).unwrap_or(0))
}

/// `time` to the second, as a certificate holds it.
fn whole_seconds(time: SystemTime) -> SystemTime {
    let seconds = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    UNIX_EPOCH + Duration::from_secs(seconds)
}
