//! The HTTP client of `update`: the proxies it goes through (`proxies`),
//! which certificate authorities it trusts (the system's store, and CA
//! certificates added from PEM files, see [`trust`](super::trust)), and
//! what a refused certificate looks like in a message.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::error::{Error, Result};
use crate::update::options::UpdateOptions;
use crate::update::trust::{Trust, refusal};

/// The client every request of an update goes through: reqwest with rustls
/// on ring, the proxies of `options` and no others, and for TLS the
/// system's CA store (rustls-platform-verifier: on Linux the file and
/// directory `SSL_CERT_FILE` and `SSL_CERT_DIR` name, else the
/// distribution's bundle, as OpenSSL finds it) with the certificates of
/// `options.ca_certs` added beside it, each also accepted when a server
/// presents exactly it ([`Trust`]).
pub(crate) fn build(options: &UpdateOptions) -> Result<reqwest::Client> {
    let proxies = options.proxies.to_reqwest()?;
    let roots = ca_certificates(&options.ca_certs)?;
    let cannot = |what: String| {
        Error::io(
            None,
            std::io::Error::other(format!("cannot set up HTTP: {what}")),
        )
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let trust = Trust::new(roots, Arc::clone(&provider)).map_err(|e| cannot(e.to_string()))?;
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| cannot(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(trust))
        .with_no_client_auth();
    // As reqwest offers them for its own configurations.
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("seekless/", env!("CARGO_PKG_VERSION")))
        .timeout(options.timeout)
        .connect_timeout(options.timeout.min(Duration::from_secs(10)))
        .pool_max_idle_per_host(options.concurrency.max(1))
        // Not reqwest's own reading of the environment (upper case first,
        // `HTTP_PROXY` too): only the proxies given.
        .no_proxy()
        .tls_backend_preconfigured(tls);
    for proxy in proxies {
        builder = builder.proxy(proxy);
    }
    builder.build().map_err(|e| cannot(describe(&e)))
}

/// The certificates of every PEM file in `paths`, each checked as a trust
/// anchor: a file that cannot be read, holds no certificate or a damaged
/// one is an error naming it.
fn ca_certificates(paths: &[PathBuf]) -> Result<Vec<CertificateDer<'static>>> {
    let mut roots = Vec::new();
    for path in paths {
        let invalid = |what: String| {
            Error::io(
                path.clone(),
                std::io::Error::new(std::io::ErrorKind::InvalidData, what),
            )
        };
        let pem = std::fs::read(path).map_err(|e| {
            Error::io(
                path.clone(),
                std::io::Error::new(e.kind(), format!("cannot read CA certificates: {e}")),
            )
        })?;
        let before = roots.len();
        for (n, der) in CertificateDer::pem_slice_iter(&pem).enumerate() {
            let der = der.map_err(|e| invalid(format!("not PEM: {e}")))?;
            rustls::RootCertStore::empty()
                .add(der.clone())
                .map_err(|e| invalid(format!("certificate {}: {e}", n + 1)))?;
            roots.push(der);
        }
        if roots.len() == before {
            return Err(invalid(
                "no CA certificate in it (PEM: -----BEGIN CERTIFICATE----- blocks)".into(),
            ));
        }
    }
    Ok(roots)
}

/// Why a request failed, when a TLS certificate was refused: trying again
/// would be refused again. In plain words, with what to do
/// ([`refusal`]).
pub(crate) fn refused_certificate(e: &reqwest::Error) -> Option<String> {
    let host = e
        .url()
        .and_then(|url| url.host_str())
        .unwrap_or("the server");
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(error) = next {
        if let Some(rustls::Error::InvalidCertificate(why)) = error.downcast_ref() {
            return Some(format!("TLS certificate refused: {}", refusal(why, host)));
        }
        // An io::Error's source() skips the error it wraps (rustls's
        // travels in one, sometimes in two): that error is the next.
        next = match error
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(inner) => Some(inner),
            None => error.source(),
        };
    }
    None
}

/// A request error in one line: a refused certificate in plain words
/// ([`refused_certificate`]), anything else with its causes
/// ([`describe`]).
pub(crate) fn explain(e: &reqwest::Error) -> String {
    refused_certificate(e).unwrap_or_else(|| describe(e))
}

/// A request error with its causes, one line.
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_files_are_checked_and_named() {
        let dir = std::env::temp_dir().join(format!("seekless-client-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let missing = dir.join("missing.pem");
        let empty = write("empty.pem", "");
        let key = write(
            "key.pem",
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        );
        let damaged = write(
            "damaged.pem",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        );
        let unended = write("unended.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n");
        for (path, wanted) in [
            (&missing, "cannot read CA certificates"),
            (&empty, "no CA certificate in it"),
            (&key, "no CA certificate in it"),
            (&damaged, "certificate 1: "),
            (&unended, "not PEM: "),
        ] {
            let e = ca_certificates(std::slice::from_ref(path)).unwrap_err();
            let text = e.to_string();
            assert!(
                text.starts_with(&format!("{}: ", path.display())) && text.contains(wanted),
                "{text}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
