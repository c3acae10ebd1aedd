//! `seekless pwned probe [URL]`: one HTTP GET, for health checks where
//! there is no curl (the container image holds nothing but this binary).
//!
//! A plain HTTP/1.1 request by hyper's client on a runtime of one thread,
//! with a deadline: no TLS, nothing the `serve` feature does not already
//! build, so a build without `update` has it too. The body goes to
//! standard output as received; the exit status says how it went: 0 for a
//! 2xx answer, 1 for any other status (redirects are not followed), 2 when
//! there is no answer (the URL is not `http://…`, the name does not
//! resolve, the connection is refused or times out, the answer is not
//! HTTP).

use std::io::Write;
use std::net::{TcpStream, ToSocketAddrs};
use std::pin::Pin;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use hyper::body::Body as _;
use hyper::header::{CONTENT_LENGTH, HeaderMap, TRANSFER_ENCODING};
use hyper_util::rt::TokioIo;

/// The largest body read; a health check's is a few lines.
const MAX_ANSWER: usize = 16 << 20;

/// Get a URL over HTTP: print the body; exit 0 on a 2xx answer, 1 on any
/// other status, 2 when there is no answer (for container health checks).
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// `http://HOST[:PORT][/PATH]` (HOST a name, an IPv4 or `[IPv6]`
    /// address; https is not spoken: probe a plain listener).
    #[arg(default_value = "http://127.0.0.1:8080/health")]
    pub url: String,
    /// Seconds the whole probe may take (connecting, asking, reading).
    #[arg(long, value_name = "SECONDS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
}

pub fn run(args: &Args) -> ExitCode {
    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    let answer = match Target::parse(&args.url) {
        Ok(target) => get(&target, deadline),
        Err(e) => Err(e),
    };
    let answer = match answer {
        Ok(answer) => answer,
        Err(e) => return crate::report::fail(format!("{}: {e}", args.url)),
    };
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(&answer.body).and_then(|()| out.flush()) {
        return crate::report::fail(e);
    }
    if (200..300).contains(&answer.status) {
        ExitCode::SUCCESS
    } else {
        eprintln!("seekless: {}: {}", args.url, answer.status_line);
        ExitCode::from(1)
    }
}

/// Where a URL points: what to connect to, what to ask for.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    /// The host as written (brackets kept for IPv6): the `Host` header.
    authority: String,
    /// The host to resolve (no brackets).
    host: String,
    port: u16,
    /// Path and query, `/` when the URL has none.
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Target, String> {
        let rest = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => {
                return Err("https is not spoken here: probe a plain http:// listener".into());
            }
            _ => return Err("not an http:// URL".into()),
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let path = match tail.split('#').next().unwrap_or("") {
            "" => "/".to_string(),
            p if p.starts_with('?') => format!("/{p}"),
            p => p.to_string(),
        };
        if authority.contains('@') {
            return Err("credentials in the URL are not supported".into());
        }
        let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
            let (host, after) = bracketed
                .split_once(']')
                .ok_or("an IPv6 address needs its closing `]`")?;
            match after {
                "" => (host, None),
                _ => (
                    host,
                    Some(
                        after
                            .strip_prefix(':')
                            .ok_or("junk after the IPv6 address")?,
                    ),
                ),
            }
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err("no host in the URL".into());
        }
        let port = match port {
            None | Some("") => 80,
            Some(p) => p.parse().map_err(|_| format!("bad port {p:?}"))?,
        };
        if path.bytes().any(|b| b.is_ascii_control() || b == b' ') {
            return Err("spaces or control characters in the path".into());
        }
        Ok(Target {
            authority: authority.to_string(),
            host: host.to_string(),
            port,
            path,
        })
    }
}

/// An HTTP answer: status code, status line, body (transfer coding removed).
#[derive(Debug)]
struct Answer {
    status: u16,
    status_line: String,
    body: Vec<u8>,
}

/// The time left before `deadline`, or an error once it has passed.
fn left(deadline: Instant) -> Result<Duration, String> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| "timed out".to_string())
}

fn get(target: &Target, deadline: Instant) -> Result<Answer, String> {
    let stream = connect(target, deadline)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        stream.set_nonblocking(true).map_err(|e| e.to_string())?;
        let stream = tokio::net::TcpStream::from_std(stream).map_err(|e| e.to_string())?;
        tokio::time::timeout(left(deadline)?, exchange(stream, target))
            .await
            .unwrap_or_else(|_| Err("timed out waiting for the answer".into()))
    })
}

/// A connection to the first of the host's addresses that takes one.
fn connect(target: &Target, deadline: Instant) -> Result<TcpStream, String> {
    let addresses = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", target.host))?;
    let mut last_error = format!("{} resolves to no address", target.host);
    for address in addresses {
        match TcpStream::connect_timeout(&address, left(deadline)?) {
            Ok(stream) => return Ok(stream),
            Err(e) => last_error = format!("cannot connect to {address}: {e}"),
        }
    }
    Err(last_error)
}

/// Asks for the target's path on `stream` (`Connection: close`) and reads
/// the whole answer.
async fn exchange(stream: tokio::net::TcpStream, target: &Target) -> Result<Answer, String> {
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        .title_case_headers(true)
        .handshake::<_, String>(TokioIo::new(stream))
        .await
        .map_err(|e| format!("sending the request: {e}"))?;
    tokio::spawn(connection);
    let request = hyper::Request::get(target.path.as_str())
        .header("Host", target.authority.as_str())
        .header(
            "User-Agent",
            concat!("seekless-probe/", env!("CARGO_PKG_VERSION")),
        )
        .header("Accept", "*/*")
        .header("Connection", "close")
        .body(String::new())
        .map_err(|e| format!("cannot ask for this URL: {e}"))?;
    let response = sender.send_request(request).await.map_err(|e| {
        if e.is_parse() {
            format!("not an HTTP answer ({e})")
        } else if e.is_incomplete_message() {
            "not an HTTP answer (no end of headers)".to_string()
        } else {
            format!("reading the answer: {}", cause(&e))
        }
    })?;
    let status = response.status();
    let reason = match response.extensions().get::<hyper::ext::ReasonPhrase>() {
        Some(reason) => String::from_utf8_lossy(reason.as_bytes()).into_owned(),
        None => status.canonical_reason().unwrap_or("").to_string(),
    };
    let status_line = format!("{:?} {} {reason}", response.version(), status.as_u16());
    let framing = Framing::of(response.headers());
    let mut incoming = response.into_body();
    let mut body = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut incoming).poll_frame(cx)).await
    {
        let frame = frame.map_err(|e| framing.failure(&e, body.len()))?;
        if let Ok(data) = frame.into_data() {
            if body.len() + data.len() > MAX_ANSWER {
                return Err(format!("answer larger than {} MiB", MAX_ANSWER >> 20));
            }
            body.extend_from_slice(&data);
        }
    }
    Ok(Answer {
        status: status.as_u16(),
        status_line,
        body,
    })
}

/// How an answer's head says its body ends: for saying what went wrong
/// when it does not end so.
struct Framing {
    /// `Transfer-Encoding: …, chunked`.
    chunked: bool,
    /// `Content-Length`.
    length: Option<usize>,
}

impl Framing {
    fn of(headers: &HeaderMap) -> Framing {
        let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
        Framing {
            chunked: text(TRANSFER_ENCODING).is_some_and(|value| {
                value
                    .rsplit(',')
                    .next()
                    .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"))
            }),
            length: text(CONTENT_LENGTH).and_then(|v| v.trim().parse().ok()),
        }
    }

    /// What an error met reading the body means, `received` bytes into it.
    fn failure(&self, e: &hyper::Error, received: usize) -> String {
        let io = std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>());
        match io.map(std::io::Error::kind) {
            Some(std::io::ErrorKind::UnexpectedEof) => match self.length {
                _ if self.chunked => "the connection closed inside a chunked body".into(),
                Some(length) => format!("body cut short: {received} of {length} bytes"),
                None => "the connection closed before the whole answer".into(),
            },
            Some(std::io::ErrorKind::InvalidInput | std::io::ErrorKind::InvalidData) => {
                format!("bad chunked body: {}", cause(e))
            }
            _ => format!("reading the answer: {}", cause(e)),
        }
    }
}

/// The innermost cause of a hyper error, in its own words (the I/O
/// error's, when there is one).
fn cause(e: &hyper::Error) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(authority: &str, host: &str, port: u16, path: &str) -> Target {
        Target {
            authority: authority.into(),
            host: host.into(),
            port,
            path: path.into(),
        }
    }

    #[test]
    fn urls() {
        assert_eq!(
            Target::parse("http://127.0.0.1:8080/health"),
            Ok(target("127.0.0.1:8080", "127.0.0.1", 8080, "/health"))
        );
        assert_eq!(
            Target::parse("HTTP://localhost"),
            Ok(target("localhost", "localhost", 80, "/"))
        );
        assert_eq!(
            Target::parse("http://[::1]:9/range/5BAA6?mode=ntlm#x"),
            Ok(target("[::1]:9", "::1", 9, "/range/5BAA6?mode=ntlm"))
        );
        assert_eq!(
            Target::parse("http://host?q"),
            Ok(target("host", "host", 80, "/?q"))
        );
        for bad in [
            "https://localhost/health",
            "localhost:8080",
            "ftp://x/",
            "http://:80/",
            "http://h:99999/",
            "http://[::1/",
            "http://[::1]x/",
            "http://u:p@h/",
            "http://h/a b",
        ] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }
}
