//! `seekless pwned serve` as a child process on an ephemeral port of
//! 127.0.0.1, and the command-line tests' one HTTP/1.1 client: a request
//! a connection (`Connection: close`), written byte for byte, so that the
//! tests can also send what no client library would.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{SEEKLESS, announced};

/// A running server, killed on drop; requests go through its [`Probe`].
pub struct Server {
    pub child: Child,
    pub probe: Probe,
}

impl std::ops::Deref for Server {
    type Target = Probe;

    fn deref(&self) -> &Probe {
        &self.probe
    }
}

/// Sends requests to a server on 127.0.0.1.
#[derive(Clone, Copy)]
pub struct Probe {
    pub port: u16,
}

impl Server {
    /// Everything the (stopped) server wrote to stderr.
    pub fn stderr_text(&mut self) -> String {
        let mut text = String::new();
        let mut stderr = self.child.stderr.take().expect("stderr is piped");
        stderr.read_to_string(&mut text).unwrap();
        text
    }

    /// `seekless pwned serve` of `indexes` on an ephemeral port of
    /// 127.0.0.1, with `extra` arguments.
    pub fn start(indexes: &[&Path], extra: &[&str]) -> Server {
        let mut args = vec!["--listen", "127.0.0.1:0"];
        for index in indexes {
            args.extend(["-i", index.to_str().expect("a UTF-8 path")]);
        }
        args.extend_from_slice(extra);
        Server::run(&args)
    }

    /// `seekless pwned serve ARGS` with its standard output and error
    /// piped; its port is the one it announces first.
    pub fn run(args: &[&str]) -> Server {
        let mut child = Command::new(SEEKLESS)
            .args(["pwned", "serve"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (port, _) = announced(&mut child);
        Server {
            child,
            probe: Probe { port },
        }
    }

    /// Sends the server a signal (`"TERM"`, `"HUP"`, …); it must be there.
    pub fn signal(&self, name: &str) {
        let sent = Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -{name}");
    }

    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Probe {
    /// Sends raw request bytes; reads the answer until the server closes.
    pub fn raw(&self, request: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(20)))?;
        stream.write_all(request)?;
        let mut out = Vec::new();
        stream.read_to_end(&mut out)?;
        Ok(out)
    }

    /// Sends raw bytes, then closes the sending side (as a client that
    /// gives up would) and reads what comes back.
    pub fn raw_then_eof(&self, request: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(20)))?;
        stream.write_all(request)?;
        stream.shutdown(std::net::Shutdown::Write)?;
        let mut out = Vec::new();
        stream.read_to_end(&mut out)?;
        Ok(out)
    }

    pub fn get(&self, path: &str, headers: &[(&str, &str)]) -> Response {
        self.request("GET", path, headers)
    }

    pub fn request(&self, method: &str, path: &str, headers: &[(&str, &str)]) -> Response {
        self.send(method, path, headers, b"")
    }

    /// `method path` with `headers` and `body` (its `Content-Length` added).
    pub fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() {
            request.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        request.push_str("Connection: close\r\n\r\n");
        let mut request = request.into_bytes();
        request.extend_from_slice(body);
        self.exchange(&request).unwrap()
    }

    /// Sends raw request bytes and reads one answer: as far as its
    /// `Content-Length` when it has one (a server may keep the connection
    /// open all the same), else until the server closes.
    pub fn exchange(&self, request: &[u8]) -> std::io::Result<Response> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        stream.write_all(request)?;
        let mut raw = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        let mut length = None;
        loop {
            if length.is_none()
                && let Some(end) = header_end(&raw)
            {
                length = Some(
                    Response::head(&raw[..end])
                        .content_length()
                        .map(|n| end + n),
                );
            }
            if matches!(length, Some(Some(n)) if raw.len() >= n) {
                break;
            }
            let n = stream.read(&mut buf)?;
            if n == 0 {
                break;
            }
            raw.extend_from_slice(&buf[..n]);
        }
        Ok(Response::parse(&raw))
    }
}

/// Where the header of an answer ends (after its blank line).
fn header_end(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| p + 4)
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// An answer as read from the connection: its header, then its body,
    /// decoded when it came in chunks.
    pub fn parse(bytes: &[u8]) -> Response {
        let end = header_end(bytes)
            .unwrap_or_else(|| panic!("no header end: {:?}", String::from_utf8_lossy(bytes)));
        let mut response = Response::head(&bytes[..end]);
        let body = &bytes[end..];
        response.body = match response.header("transfer-encoding") {
            Some(coding) if coding.contains("chunked") => unchunk(body),
            _ => body.to_vec(),
        };
        response
    }

    /// The status line and header fields (names in lower case) of `head`.
    fn head(head: &[u8]) -> Response {
        let head = std::str::from_utf8(head).unwrap().trim_end();
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap()[9..12].parse().unwrap();
        let headers = lines
            .map(|l| {
                let (n, v) = l.split_once(':').unwrap();
                (n.to_ascii_lowercase(), v.trim().to_string())
            })
            .collect();
        Response {
            status,
            headers,
            body: Vec::new(),
        }
    }

    fn content_length(&self) -> Option<usize> {
        self.header("content-length").and_then(|n| n.parse().ok())
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// The body sent in chunks (`Transfer-Encoding: chunked`), joined.
fn unchunk(mut rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = rest.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = std::str::from_utf8(&rest[..eol]).unwrap().trim();
        let size = usize::from_str_radix(size, 16).unwrap();
        rest = &rest[eol + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// Waits (boundedly) for the background verification to finish.
pub fn wait_healthy(server: &Server) -> Response {
    let start = Instant::now();
    loop {
        let health = server.get("/health", &[]);
        if health.status == 200 || start.elapsed() > Duration::from_secs(30) {
            return health;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
