//! `seekless pwned serve --tls-ca-dir DIR --tls-name NAME…` as a process:
//! the CA made on the first start and kept by later ones, the server
//! certificate kept, made again for other names, renewed while serving;
//! clients that trust only DIR/ca.pem reach it by a hardcoded name
//! (`api.pwnedpasswords.com`, resolved to 127.0.0.1 by the client here, by
//! an `/etc/hosts` entry in scripts/check-pwned-clients.sh); a directory
//! that cannot serve is one line naming the file.
#![cfg(feature = "serve")]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use seekless_testkit::TempDir;

use crate::common;
use common::{SEEKLESS, prepare_index, snapshot};

const HOST: &str = "api.pwnedpasswords.com";

/// A running `serve` with a stand-in CA, killed on drop.
struct Server {
    child: Child,
    port: u16,
    /// What it announced first.
    ca_line: String,
}

impl Server {
    fn start(index: &Path, dir: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(SEEKLESS)
            .args(["pwned", "serve", "-i"])
            .arg(index)
            .args(["--tls-listen", "127.0.0.1:0", "--tls-ca-dir"])
            .arg(dir)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = |what: &str| {
            let mut text = String::new();
            stdout.read_line(&mut text).unwrap();
            assert!(text.starts_with(what), "not {what:?}: {text:?}");
            text.trim_end().to_string()
        };
        let ca_line = line("CA certificate to distribute: ");
        let port = line("listening on https://127.0.0.1:")
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        Server {
            child,
            port,
            ca_line,
        }
    }

    /// `GET https://HOST:PORT/range/5BAA6` by a client that trusts only
    /// the CA in `ca` and reaches `host` at 127.0.0.1: the body and the
    /// DER of the certificate the server showed.
    fn range(&self, host: &str, ca: &Path) -> (String, Vec<u8>) {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ca = reqwest::Certificate::from_pem(&std::fs::read(ca).unwrap()).unwrap();
        let client = reqwest::Client::builder()
            .no_proxy()
            .tls_certs_only([ca])
            .tls_info(true)
            .resolve(HOST, SocketAddr::from(([127, 0, 0, 1], self.port)))
            .timeout(Duration::from_secs(20))
            .build()
            .unwrap();
        let url = format!("https://{host}:{}/range/5BAA6", self.port);
        runtime().block_on(async {
            let response = client.get(&url).send().await.unwrap();
            assert_eq!(response.status(), 200);
            let peer = response
                .extensions()
                .get::<reqwest::tls::TlsInfo>()
                .and_then(|info| info.peer_certificate())
                .expect("TLS info")
                .to_vec();
            (response.text().await.unwrap(), peer)
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn der(path: &Path) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::from_pem_file(path)
        .unwrap()
        .to_vec()
}

/// A directory with a one-hash index in it.
fn setup(what: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new(&format!("cli-stand-in-{what}"));
    let index = prepare_index(
        "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824\n",
        &dir.join("corpus.txt"),
        &dir.join("pwned.idx"),
    );
    (dir, index)
}

const LINE: &str = "1E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824";

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_first_start_makes_the_ca_and_later_starts_keep_it() {
    let (dir, index) = setup("keep");
    let ca_dir = dir.join("stand-in");
    let ca = ca_dir.join("ca.pem");
    let names = ["--tls-name", HOST, "--tls-name", "127.0.0.1"];
    let server = Server::start(&index, &ca_dir, &names);
    assert_eq!(
        server.ca_line,
        format!("CA certificate to distribute: {}", ca.display())
    );
    let (body, first) = server.range(HOST, &ca);
    assert!(body.lines().any(|l| l == LINE), "{body}");
    assert_eq!(first, der(&ca_dir.join("server.pem")));
    assert!(server.range("127.0.0.1", &ca).0.contains(LINE));
    drop(server);
    let files: Vec<String> = snapshot(&ca_dir)
        .keys()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, ["ca.key", "ca.pem", "server.key", "server.pem"]);
    #[cfg(unix)]
    {
        assert_eq!(mode(&ca_dir.join("ca.key")), 0o600);
        assert_eq!(mode(&ca_dir.join("server.key")), 0o600);
    }
    // A later start: the same CA, the same certificate.
    let before = snapshot(&ca_dir);
    let server = Server::start(&index, &ca_dir, &names);
    assert_eq!(server.range(HOST, &ca).1, first);
    drop(server);
    assert!(snapshot(&ca_dir) == before, "nothing written");
    // Other names: the same CA, a new certificate for them.
    let server = Server::start(&index, &ca_dir, &["--tls-name", "localhost"]);
    let (body, other) = server.range("localhost", &ca);
    assert!(body.contains(LINE));
    assert_ne!(other, first);
    let after = snapshot(&ca_dir);
    for kept in ["ca.pem", "ca.key"] {
        let path = ca_dir.join(kept);
        assert_eq!(after[&path], before[&path], "{kept}");
    }
    assert_eq!(after.len(), 4, "no temporary file left");
}

#[test]
fn the_certificate_is_renewed_while_serving() {
    let (dir, index) = setup("renew");
    let ca_dir = dir.join("ca");
    let ca = ca_dir.join("ca.pem");
    let server = Server::start(
        &index,
        &ca_dir,
        &["--tls-name", HOST, "--tls-lifetime", "9s"],
    );
    let ca_before = std::fs::read(&ca).unwrap();
    let (_, first) = server.range(HOST, &ca);
    // Renewed when 3 s of its 9 are left: a new certificate from the same
    // CA for new connections, well before the old one ends.
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut seen = vec![first];
    while seen.len() < 3 {
        assert!(
            Instant::now() < deadline,
            "renewed {} times",
            seen.len() - 1
        );
        std::thread::sleep(Duration::from_millis(250));
        let (body, peer) = server.range(HOST, &ca);
        assert!(body.contains(LINE));
        if peer != *seen.last().unwrap() {
            seen.push(peer);
        }
    }
    assert_eq!(std::fs::read(&ca).unwrap(), ca_before);
    assert_eq!(*seen.last().unwrap(), der(&ca_dir.join("server.pem")));
}

/// `serve` with `dir` as its CA directory, expected to stop at once.
fn refused_start(index: &Path, dir: &Path, as_nobody: bool) -> Output {
    let mut command = Command::new(SEEKLESS);
    command
        .args(["pwned", "serve", "-i"])
        .arg(index)
        .args(["--tls-listen", "127.0.0.1:0", "--tls-ca-dir"])
        .arg(dir)
        .args(["--tls-name", "localhost"]);
    #[cfg(unix)]
    if as_nobody {
        use std::os::unix::process::CommandExt;
        command.uid(65534).gid(65534);
    }
    #[cfg(not(unix))]
    let _ = as_nobody;
    command.output().unwrap()
}

#[test]
fn a_directory_that_cannot_serve_is_one_line_naming_the_file() {
    let (dir, index) = setup("bad");
    // Two CAs, made by serve itself.
    let (first, second) = (dir.join("first"), dir.join("second"));
    drop(Server::start(&index, &first, &["--tls-name", "localhost"]));
    drop(Server::start(&index, &second, &["--tls-name", "localhost"]));
    let make = |name: &str, files: &[(&Path, &str)]| {
        let path = dir.join(name);
        std::fs::create_dir(&path).unwrap();
        for (from, file) in files {
            std::fs::copy(from.join(file), path.join(file)).unwrap();
        }
        path
    };
    let mismatched = make("mismatched", &[(&first, "ca.pem"), (&second, "ca.key")]);
    let no_key = make("no-key", &[(&first, "ca.pem")]);
    let no_cert = make("no-cert", &[(&first, "ca.key")]);
    let leaf = make("leaf", &[(&first, "server.pem"), (&first, "ca.key")]);
    std::fs::rename(leaf.join("server.pem"), leaf.join("ca.pem")).unwrap();
    let file = dir.join("corpus.txt");
    let named = |path: PathBuf| path.display().to_string();
    for (ca_dir, says) in [
        (
            &mismatched,
            vec![
                named(mismatched.join("ca.key")),
                format!(
                    "does not match the certificate in {}",
                    named(mismatched.join("ca.pem"))
                ),
            ],
        ),
        (
            &no_key,
            vec![named(no_key.join("ca.key")), "missing".into()],
        ),
        (
            &no_cert,
            vec![
                named(no_cert.join("ca.key")),
                "there is no ca.pem beside it".into(),
            ],
        ),
        (
            &leaf,
            vec![named(leaf.join("ca.pem")), "not a CA certificate".into()],
        ),
        (&file, vec![named(file.clone()), "not a directory".into()]),
    ] {
        let before = snapshot(&dir);
        let out = refused_start(&index, ca_dir, false);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(out.stdout.is_empty(), "nothing announced: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        for piece in &says {
            assert!(
                stderr.contains(piece.as_str()),
                "{stderr}\nshould say {piece:?}"
            );
        }
        assert!(snapshot(&dir) == before, "{stderr}: nothing written");
    }
    let out = Command::new(SEEKLESS)
        .args(["pwned", "serve", "-i"])
        .arg(&index)
        .args(["--tls-listen", "0", "--tls-ca-dir"])
        .arg(dir.join("y"))
        .args(["--tls-name", "not a name"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--tls-name \"not a name\": not a DNS name or an IP address"),
        "{stderr}"
    );
}

/// A directory this user cannot write in (as root, the child runs as
/// nobody: root writes anywhere).
#[cfg(unix)]
#[test]
fn a_directory_that_is_not_writable_is_refused_naming_it() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, index) = setup("read-only");
    let ca_dir = dir.join("ca");
    drop(Server::start(&index, &ca_dir, &["--tls-name", "localhost"]));
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let set = |mode| std::fs::set_permissions(&ca_dir, std::fs::Permissions::from_mode(mode));
    set(0o555).unwrap();
    let out = refused_start(&index, &ca_dir, root);
    set(0o755).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("{}: cannot write in it", ca_dir.display()))
            && stderr.contains("must be writable"),
        "{stderr}"
    );
}
