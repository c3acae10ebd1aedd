//! The HTTP proxies of `update`, read from the environment as curl reads
//! them (never left to reqwest's own rules), or set one by one.

use std::fmt;

use crate::error::{Error, Result};

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
    pub(super) fn to_reqwest(&self) -> Result<Vec<reqwest::Proxy>> {
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
}
