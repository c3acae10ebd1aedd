//! `seekless pwned probe [URL]`: one HTTP GET, for health checks where
//! there is no curl (the container image holds nothing but this binary).
//!
//! A plain HTTP/1.1 request over a std `TcpStream`, synchronous, with a
//! deadline: no async runtime, no TLS, nothing the `serve` feature does not
//! already need, so a build without `update` has it too. The body goes to
//! standard output as received; the exit status says how it went: 0 for a
//! 2xx answer, 1 for any other status (redirects are not followed), 2 when
//! there is no answer (the URL is not `http://…`, the name does not
//! resolve, the connection is refused or times out, the answer is not
//! HTTP).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The largest answer read (head and body); a health check's is a few lines.
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
    let addresses = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", target.host))?;
    let mut stream = None;
    let mut last_error = format!("{} resolves to no address", target.host);
    for address in addresses {
        match TcpStream::connect_timeout(&address, left(deadline)?) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last_error = format!("cannot connect to {address}: {e}"),
        }
    }
    let mut stream = stream.ok_or(last_error)?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: seekless-probe/{}\r\nAccept: */*\r\nConnection: close\r\n\r\n",
        target.path,
        target.authority,
        env!("CARGO_PKG_VERSION")
    );
    stream
        .set_write_timeout(Some(left(deadline)?))
        .and_then(|()| stream.write_all(request.as_bytes()))
        .map_err(|e| format!("sending the request: {e}"))?;
    let mut received = Vec::with_capacity(4096);
    let mut buffer = [0u8; 16384];
    let mut head: Option<Head> = None;
    loop {
        stream
            .set_read_timeout(Some(left(deadline)?))
            .map_err(|e| e.to_string())?;
        let n = match stream.read(&mut buffer) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err("timed out waiting for the answer".into());
            }
            Err(e) => return Err(format!("reading the answer: {e}")),
        };
        if n == 0 {
            let head = head.ok_or("not an HTTP answer (no end of headers)")?;
            return answer(head, &received, true)?
                .ok_or_else(|| "the connection closed before the whole answer".into());
        }
        if received.len() + n > MAX_ANSWER {
            return Err(format!("answer larger than {} MiB", MAX_ANSWER >> 20));
        }
        // Only the new bytes (and the three before them) can end the head.
        let from = received.len().saturating_sub(3);
        received.extend_from_slice(&buffer[..n]);
        if head.is_none() {
            if let Some(end) = received[from..].windows(4).position(|w| w == b"\r\n\r\n") {
                head = Some(Head::parse(&received[..from + end], from + end + 4)?);
            } else if received.len() > 64 << 10 {
                return Err("not an HTTP answer (no end of headers)".into());
            }
        }
        // A body with a length is whole once that much has come; any other
        // ends when the server closes (the request asked it to).
        if let Some(head) = &head
            && head.length.is_some()
            && !head.chunked
            && let Some(answer) = answer(head.clone(), &received, false)?
        {
            return Ok(answer);
        }
    }
}

/// What the head of an answer says.
#[derive(Debug, Clone)]
struct Head {
    status: u16,
    status_line: String,
    /// `Content-Length`.
    length: Option<usize>,
    /// `Transfer-Encoding: …, chunked`.
    chunked: bool,
    /// Where the body starts (past the blank line).
    body_start: usize,
}

impl Head {
    /// Parses the status line and headers (`head`, without the blank line).
    fn parse(head: &[u8], body_start: usize) -> Result<Head, String> {
        let head = std::str::from_utf8(head).map_err(|_| "headers are not text".to_string())?;
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or("");
        let status = status_line
            .strip_prefix("HTTP/1.")
            .and_then(|s| s.get(1..5))
            .and_then(|s| s.strip_prefix(' '))
            .filter(|code| code.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|code| code.parse::<u16>().ok())
            .ok_or_else(|| format!("not an HTTP status line: {status_line:?}"))?;
        let mut length = None;
        let mut chunked = false;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                return Err(format!("malformed header line {line:?}"));
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                let n = value
                    .parse::<usize>()
                    .map_err(|_| format!("bad Content-Length {value:?}"))?;
                length = Some(n);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value
                    .rsplit(',')
                    .next()
                    .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
            }
        }
        Ok(Head {
            status,
            status_line: status_line.to_string(),
            length,
            chunked,
            body_start,
        })
    }
}

/// The answer whose head is `head`, from everything `received`, once its
/// body is whole (`closed`: the server has closed the connection, which
/// ends a body without a length); `None` while more is to come.
fn answer(head: Head, received: &[u8], closed: bool) -> Result<Option<Answer>, String> {
    let rest = &received[head.body_start..];
    let body = if head.chunked {
        match dechunk(rest)? {
            Some(body) => body,
            None if closed => return Err("the connection closed inside a chunked body".into()),
            None => return Ok(None),
        }
    } else if let Some(length) = head.length {
        if rest.len() < length {
            if closed {
                return Err(format!("body cut short: {} of {length} bytes", rest.len()));
            }
            return Ok(None);
        }
        rest[..length].to_vec()
    } else if closed {
        rest.to_vec()
    } else {
        return Ok(None);
    };
    Ok(Some(Answer {
        status: head.status,
        status_line: head.status_line,
        body,
    }))
}

/// A chunked body decoded, once its last chunk has arrived (trailers are
/// not needed: the connection closes after them).
fn dechunk(mut rest: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = rest.windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        let line = std::str::from_utf8(&rest[..line_end]).unwrap_or("");
        let size = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size, 16)
            .ok()
            .filter(|_| !size.is_empty() && size.len() <= 8)
            .ok_or_else(|| format!("bad chunk size line {line:?}"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(Some(body));
        }
        if rest.len() < size + 2 {
            return Ok(None);
        }
        if &rest[size..size + 2] != b"\r\n" {
            return Err("a chunk does not end with CRLF".into());
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
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

    /// The answer in `received`, as `get` reads it.
    fn whole(received: &[u8], closed: bool) -> Result<Option<Answer>, String> {
        let end = received
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or("no end of headers")?;
        answer(Head::parse(&received[..end], end + 4)?, received, closed)
    }

    #[test]
    fn answers() {
        let with_length = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\nextra";
        let answer = whole(with_length, false).unwrap().unwrap();
        assert_eq!((answer.status, &answer.body[..]), (200, &b"ok\n"[..]));
        assert!(whole(&with_length[..40], false).unwrap().is_none());
        assert!(whole(&with_length[..40], true).is_err());

        let chunked = b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let answer = whole(chunked, false).unwrap().unwrap();
        assert_eq!((answer.status, &answer.body[..]), (503, &b"abcde"[..]));
        assert_eq!(answer.status_line, "HTTP/1.1 503 Service Unavailable");
        assert!(whole(&chunked[..75], false).unwrap().is_none());
        assert!(whole(&chunked[..75], true).is_err());

        let until_close = b"HTTP/1.0 404 Not Found\r\n\r\nnope";
        assert!(whole(until_close, false).unwrap().is_none());
        assert_eq!(whole(until_close, true).unwrap().unwrap().body, b"nope");

        for bad in [
            &b"SSH-2.0-OpenSSH\r\n\r\n"[..],
            b"HTTP/1.1 2x0 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ] {
            assert!(whole(bad, true).is_err(), "{bad:?}");
        }
    }
}
