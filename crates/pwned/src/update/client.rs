//! The HTTP client of `update`: which proxies it goes through (read from
//! the environment as curl reads it, never left to reqwest's own rules),
//! which certificate authorities it trusts (the system's store, and CA
//! certificates added from PEM files, see [`trust`](super::trust)), and
//! what a refused certificate looks like in a message.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::error::{Error, Result};
use crate::update::UpdateOptions;
use crate::update::trust::{Trust, refusal};

/// The HTTP proxies [`update`](crate::update()) sends its requests through.
///
/// [`Proxies::from_env`] reads them from the environment as curl does;
/// [`Proxies::none`] goes straight to every server; [`Proxies::http`],
/// [`Proxies::https`] and [`Proxies::no_proxy`] set them one by one. A
/// proxy is an `http://` URL (or `https://`, reached over TLS; no scheme
/// means `http://`); a user and password in it are sent as
/// `Proxy-Authorization: Basic`. Requests for `https://` URLs go through a
/// `CONNECT` tunnel, so the proxy never sees what they carry. SOCKS proxies
/// are not supported: `update` stops before any request, saying so.
///
/// The list of hosts reached directly (`no_proxy`) is comma-separated: a
/// name stands for itself and every name under it (`example.com` and
/// `.example.com` both cover `api.example.com`, not `badexample.com`), an
/// IP address for itself, `ADDRESS/BITS` for a network, and `*` for every
/// host. Ports are not part of an entry. Names are compared as written in
/// the base URL, before any lookup.
#[derive(Clone, PartialEq, Eq)]
pub struct Proxies {
    http: Option<Setting>,
    https: Option<Setting>,
    no_proxy: Option<Setting>,
}

/// One value, and where it came from (a variable's name), for messages.
#[derive(Clone, PartialEq, Eq)]
struct Setting {
    value: String,
    from: &'static str,
}

impl Proxies {
    /// No proxy: every request goes straight to its server, whatever the
    /// environment says.
    pub fn none() -> Proxies {
        Proxies {
            http: None,
            https: None,
            no_proxy: None,
        }
    }

    /// The proxies the environment names, read as curl reads them (lower
    /// case first):
    ///
    /// - `http://` URLs: `http_proxy`, in lower case only. Like curl, the
    ///   upper-case `HTTP_PROXY` is ignored: a CGI program finds a
    ///   request's `Proxy:` header in it ("httpoxy").
    /// - `https://` URLs: `https_proxy`, else `HTTPS_PROXY`.
    /// - either, when its own is not set: `all_proxy`, else `ALL_PROXY`.
    /// - hosts reached directly: `no_proxy`, else `NO_PROXY`.
    ///
    /// A variable set to the empty string counts as unset. Nothing else is
    /// consulted (no desktop or system proxy settings).
    pub fn from_env() -> Proxies {
        Proxies::from_vars(|name| std::env::var(name).ok())
    }

    /// Sends requests for `http://` URLs through the proxy at `url`.
    pub fn http(mut self, url: impl Into<String>) -> Proxies {
        self.http = Some(Setting::given(url.into(), "the proxy for http:// URLs"));
        self
    }

    /// Sends requests for `https://` URLs through the proxy at `url`.
    pub fn https(mut self, url: impl Into<String>) -> Proxies {
        self.https = Some(Setting::given(url.into(), "the proxy for https:// URLs"));
        self
    }

    /// Reaches the hosts of `list` directly (format in [`Proxies`]).
    pub fn no_proxy(mut self, list: impl Into<String>) -> Proxies {
        self.no_proxy = Some(Setting::given(list.into(), "the no-proxy list"));
        self
    }

    /// [`Proxies::from_env`] over `var`, which gives a variable's value.
    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Proxies {
        let first = |names: &[&'static str]| {
            names.iter().find_map(|&name| {
                var(name)
                    .filter(|v| !v.trim().is_empty())
                    .map(|value| Setting { value, from: name })
            })
        };
        let all = || first(&["all_proxy", "ALL_PROXY"]);
        Proxies {
            http: first(&["http_proxy"]).or_else(all),
            https: first(&["https_proxy", "HTTPS_PROXY"]).or_else(all),
            no_proxy: first(&["no_proxy", "NO_PROXY"]),
        }
    }

    /// The proxies as reqwest takes them, each URL checked: an error names
    /// the variable it came from. None at all when `*` is in the no-proxy
    /// list (reqwest's own matcher takes `*` for every name but no IP
    /// address; curl for every host).
    fn to_reqwest(&self) -> Result<Vec<reqwest::Proxy>> {
        let list = self.no_proxy.as_ref().map_or("", |s| s.value.as_str());
        if list.split(',').any(|entry| entry.trim() == "*") {
            return Ok(Vec::new());
        }
        let mut proxies = Vec::new();
        for (setting, https) in [(&self.http, false), (&self.https, true)] {
            let Some(setting) = setting else { continue };
            let url = setting.proxy_url()?;
            let proxy = if https {
                reqwest::Proxy::https(url.as_str())
            } else {
                reqwest::Proxy::http(url.as_str())
            };
            let proxy = proxy.map_err(|e| setting.invalid(&e.to_string()))?;
            proxies.push(proxy.no_proxy(reqwest::NoProxy::from_string(list)));
        }
        Ok(proxies)
    }
}

impl fmt::Debug for Proxies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Proxies")
            .field("http", &self.http)
            .field("https", &self.https)
            .field("no_proxy", &self.no_proxy)
            .finish()
    }
}

impl Setting {
    fn given(value: String, from: &'static str) -> Setting {
        Setting { value, from }
    }

    /// The value as a proxy's URL (`http://` when it names no scheme),
    /// checked. Messages never repeat the value: it may hold a password.
    fn proxy_url(&self) -> Result<reqwest::Url> {
        let text = self.value.trim();
        let url = if text.contains("://") {
            reqwest::Url::parse(text)
        } else {
            reqwest::Url::parse(&format!("http://{text}"))
        }
        .map_err(|e| self.invalid(&format!("not a proxy URL ({e})")))?;
        match url.scheme() {
            "http" | "https" => {}
            scheme if scheme.starts_with("socks") => {
                return Err(self.invalid(&format!(
                    "{scheme} proxies are not supported, only HTTP proxies"
                )));
            }
            scheme => return Err(self.invalid(&format!("unknown proxy scheme {scheme:?}"))),
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(self.invalid("a proxy URL without a host"));
        }
        Ok(url)
    }

    fn invalid(&self, what: &str) -> Error {
        Error::io(
            None,
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("{}: {what}", self.from),
            ),
        )
    }
}

impl fmt::Debug for Setting {
    /// `from=value`, with a password in a URL left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (scheme, rest) = match self.value.split_once("://") {
            Some((scheme, rest)) => (format!("{scheme}://"), rest),
            None => (String::new(), self.value.as_str()),
        };
        let authority = rest.split('/').next().unwrap_or("");
        match authority.rsplit_once('@') {
            Some((_, host)) => {
                let path = &rest[authority.len()..];
                write!(f, "{}={scheme}***@{host}{path}", self.from)
            }
            None => write!(f, "{}={}", self.from, self.value),
        }
    }
}

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

    fn from(vars: &[(&str, &str)]) -> Proxies {
        Proxies::from_vars(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    }

    fn value(setting: &Option<Setting>) -> Option<(&str, &str)> {
        setting.as_ref().map(|s| (s.value.as_str(), s.from))
    }

    #[test]
    fn the_environment_is_read_as_curl_reads_it() {
        assert_eq!(from(&[]), Proxies::none());
        // HTTP_PROXY is never read; the lower case wins over the upper.
        let p = from(&[
            ("HTTP_PROXY", "http://upper:1"),
            ("HTTPS_PROXY", "http://upper:2"),
            ("https_proxy", "http://lower:2"),
            ("NO_PROXY", "upper.example"),
            ("no_proxy", "lower.example"),
        ]);
        assert_eq!(value(&p.http), None);
        assert_eq!(value(&p.https), Some(("http://lower:2", "https_proxy")));
        assert_eq!(value(&p.no_proxy), Some(("lower.example", "no_proxy")));
        // ALL_PROXY stands in for either one not set; empty is unset.
        let p = from(&[
            ("http_proxy", ""),
            ("HTTPS_PROXY", "http://upper:2"),
            ("ALL_PROXY", "http://all:3"),
        ]);
        assert_eq!(value(&p.http), Some(("http://all:3", "ALL_PROXY")));
        assert_eq!(value(&p.https), Some(("http://upper:2", "HTTPS_PROXY")));
        let p = from(&[("all_proxy", "lower:4"), ("ALL_PROXY", "http://upper:4")]);
        assert_eq!(value(&p.http), Some(("lower:4", "all_proxy")));
    }

    #[test]
    fn proxy_urls_are_checked_and_named_by_their_variable() {
        let ok = from(&[
            ("http_proxy", "proxy.example:3128"),
            ("https_proxy", "https://u:p@h"),
        ]);
        assert_eq!(ok.to_reqwest().unwrap().len(), 2);
        for (value, wanted) in [
            (
                "socks5h://127.0.0.1:1080",
                "https_proxy: socks5h proxies are not supported",
            ),
            (
                "ftp://proxy.example",
                "https_proxy: unknown proxy scheme \"ftp\"",
            ),
            ("http://[::1", "https_proxy: not a proxy URL"),
            ("http://u:secret@[::1", "https_proxy: not a proxy URL"),
        ] {
            let e = from(&[("https_proxy", value)]).to_reqwest().unwrap_err();
            let text = e.to_string();
            assert!(text.starts_with(wanted), "{value}: {text}");
            assert!(!text.contains("secret"), "{text}");
        }
        // `*` anywhere in the list: no proxy at all, IP addresses included.
        let all = from(&[
            ("https_proxy", "http://p:1"),
            ("no_proxy", "example.com, *"),
        ]);
        assert!(all.to_reqwest().unwrap().is_empty());
    }

    #[test]
    fn debug_leaves_passwords_out() {
        let p = Proxies::none()
            .https("http://user:secret@proxy.example:3128/x")
            .http("proxy.example:80")
            .no_proxy("localhost");
        let text = format!("{p:?}");
        assert!(!text.contains("secret") && !text.contains("user"), "{text}");
        assert!(text.contains("http://***@proxy.example:3128/x"), "{text}");
        assert!(text.contains("proxy.example:80"), "{text}");
        assert!(text.contains("localhost"), "{text}");
    }

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
