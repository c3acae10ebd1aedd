//! HTTPS for `pwned serve`: the certificate chain and private key (PEM
//! files), rustls on the ring provider, HTTP/2 and HTTP/1.1 offered by
//! ALPN. The pair is re-read when either file changes (or on SIGHUP): new
//! connections get the new certificate, open ones go on with the one they
//! began with, and a pair that does not load is reported once while the
//! one loaded before stays in use.
//!
//! The pair is either the operator's (`--tls-cert`, `--tls-key`) or made
//! here by a CA of the server's own ([`stand_in`], `--tls-ca-dir`), which
//! renews it by writing new files that the same re-reading serves.

mod authority;
mod files;
pub mod stand_in;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::file_identity::Identity;
use stand_in::StandIn;

/// The certificate and key served, and the files they come from.
#[derive(Debug)]
pub struct Tls {
    cert: PathBuf,
    key: PathBuf,
    config: RwLock<Arc<ServerConfig>>,
    /// The files as they were when last read: those of the pair served,
    /// or of one refused (which is then not tried again until a file
    /// changes).
    read: Mutex<(Option<Identity>, Option<Identity>)>,
    /// The CA that makes the pair, when it is the stand-in's.
    stand_in: Option<StandIn>,
}

impl Tls {
    /// Loads the pair; an error names the file at fault.
    pub fn load(cert: &Path, key: &Path) -> Result<Tls, String> {
        let read = (Identity::of(cert).ok(), Identity::of(key).ok());
        let config = config(cert, key)?;
        Ok(Tls {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            config: RwLock::new(Arc::new(config)),
            read: Mutex::new(read),
            stand_in: None,
        })
    }

    /// The pair a CA in `dir` signs for `names` (made on the first start,
    /// kept for later ones), renewed while served; `lifetime` is the
    /// certificate's.
    pub fn stand_in(dir: &Path, names: &[String], lifetime: Duration) -> Result<Tls, String> {
        let stand_in = StandIn::open(dir, names, lifetime)?;
        let (cert, key) = stand_in.files();
        let mut tls = Tls::load(cert, key)?;
        tls.stand_in = Some(stand_in);
        Ok(tls)
    }

    /// The CA's certificate clients must trust, when the pair is the
    /// stand-in's.
    pub fn authority(&self) -> Option<&Path> {
        self.stand_in.as_ref().map(StandIn::authority)
    }

    /// What accepts a new connection with the pair served now.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        let config = self.config.read().unwrap_or_else(|e| e.into_inner());
        tokio_rustls::TlsAcceptor::from(Arc::clone(&config))
    }

    /// Reads the pair again when a file changed since it was last read, or
    /// when `asked` (SIGHUP): `None` when it did not, else whether the new
    /// pair is served (an error names the file; the old pair stays).
    /// The stand-in renews its pair here, when due.
    pub fn refresh(&self, asked: bool) -> Option<Result<(), String>> {
        if let Some(Err(e)) = self.stand_in.as_ref().and_then(StandIn::renew_if_due) {
            return Some(Err(e));
        }
        let now = (Identity::of(&self.cert).ok(), Identity::of(&self.key).ok());
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        if !asked && *read == now {
            return None;
        }
        *read = now;
        drop(read);
        Some(config(&self.cert, &self.key).map(|config| {
            *self.config.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(config);
        }))
    }

    /// The files, for messages.
    pub fn files(&self) -> (&Path, &Path) {
        (&self.cert, &self.key)
    }
}

/// A server configuration for the chain in `cert` and the key in `key`.
fn config(cert: &Path, key: &Path) -> Result<ServerConfig, String> {
    let named = |path: &Path, what: String| format!("{}: {what}", path.display());
    const CERTIFICATE: &str = "a certificate (-----BEGIN CERTIFICATE-----)";
    const KEY: &str = "a private key (-----BEGIN PRIVATE KEY-----, \
                       -----BEGIN RSA PRIVATE KEY----- or -----BEGIN EC PRIVATE KEY-----)";
    let chain = CertificateDer::pem_file_iter(cert)
        .map_err(|e| named(cert, pem_error(e, CERTIFICATE)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| named(cert, pem_error(e, CERTIFICATE)))?;
    if chain.is_empty() {
        return Err(named(
            cert,
            pem_error(rustls::pki_types::pem::Error::NoItemsFound, CERTIFICATE),
        ));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|e| named(key, pem_error(e, KEY)))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .map_err(|e| {
            format!(
                "{} and {} do not make a pair: {e}",
                cert.display(),
                key.display()
            )
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    // Resumed sessions skip the key exchange; tickets keep no state here.
    if let Ok(ticketer) = rustls::crypto::ring::Ticketer::new() {
        config.ticketer = ticketer;
    }
    Ok(config)
}

/// What went wrong reading a PEM file that should hold `expected`.
fn pem_error(e: rustls::pki_types::pem::Error, expected: &str) -> String {
    use rustls::pki_types::pem::Error;
    match e {
        Error::Io(e) => e.to_string(),
        Error::NoItemsFound => format!("no PEM item in it: expected {expected}"),
        other => format!("not valid PEM ({other}): expected {expected}"),
    }
}
