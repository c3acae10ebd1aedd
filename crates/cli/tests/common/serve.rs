//! `seekless pwned serve` as a child process on an ephemeral port of
//! 127.0.0.1, and plain HTTP/1.1 requests to it (one connection each,
//! `Connection: close`), for the tests that run serve.

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

    pub fn start(indexes: &[&Path], extra: &[&str]) -> Server {
        let mut command = Command::new(SEEKLESS);
        command.args(["pwned", "serve", "--listen", "127.0.0.1:0"]);
        for index in indexes {
            command.arg("-i").arg(index);
        }
        let mut child = command
            .args(extra)
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
        let mut request = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("Connection: close\r\n\r\n");
        Response::parse(&self.raw(request.as_bytes()).unwrap())
    }
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
    pub fn parse(bytes: &[u8]) -> Response {
        let end = bytes
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no header end: {:?}", String::from_utf8_lossy(bytes)));
        let head = std::str::from_utf8(&bytes[..end]).unwrap();
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap()[9..12].parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .map(|l| {
                let (n, v) = l.split_once(':').unwrap();
                (n.to_ascii_lowercase(), v.trim().to_string())
            })
            .collect();
        let mut body = bytes[end + 4..].to_vec();
        let chunked = headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
        if chunked {
            let mut out = Vec::new();
            let mut rest = &body[..];
            loop {
                let eol = rest.windows(2).position(|w| w == b"\r\n").unwrap();
                let size =
                    usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap(), 16).unwrap();
                rest = &rest[eol + 2..];
                if size == 0 {
                    break;
                }
                out.extend_from_slice(&rest[..size]);
                rest = &rest[size + 2..];
            }
            body = out;
        }
        Response {
            status,
            headers,
            body,
        }
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
