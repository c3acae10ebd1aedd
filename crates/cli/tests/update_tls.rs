//! Which server certificates `seekless pwned update` trusts, and what it
//! says of those it refuses, against `seekless pwned serve` over HTTPS on
//! 127.0.0.1 with certificates made here: a self-signed certificate as
//! `openssl req -x509` makes it (CA:TRUE), given by `--ca-cert`, is
//! trusted as curl, Go and Python trust it; every refusal says in plain
//! words what is wrong and what to do. The base URL names a path the
//! server answers 404 for: a run that gets that far got through TLS.
#![cfg(all(feature = "update", feature = "serve"))]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    date_time_ymd,
};
use seekless_testkit::TempDir;

use crate::common;
use common::serve::Server;
use common::{SEEKLESS, prepare_index};

/// How a certificate is made: its names, its validity in years, and
/// whether it says CA:TRUE.
struct Recipe<'a> {
    names: &'a [&'a str],
    years: (i32, i32),
    ca: bool,
}

/// `openssl req -x509 -addext subjectAltName=…`: self-signed, CA:TRUE,
/// valid now.
const OPENSSL_X509: Recipe = Recipe {
    names: &["localhost", "127.0.0.1"],
    years: (2020, 2090),
    ca: true,
};

impl Recipe<'_> {
    fn params(&self) -> CertificateParams {
        let names: Vec<String> = self.names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, self.names[0]);
        params.not_before = date_time_ymd(self.years.0, 1, 1);
        params.not_after = date_time_ymd(self.years.1, 1, 1);
        if self.ca {
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        params
    }

    /// A self-signed certificate and its key, as PEM files in `dir`.
    fn self_signed(&self, dir: &Path, name: &str) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().unwrap();
        let cert = self.params().self_signed(&key).unwrap();
        write_pair(dir, name, &cert.pem(), &key.serialize_pem())
    }

    /// A certificate `ca` signs, and its key, as PEM files in `dir`.
    fn signed_by(&self, ca: &Issuer<'_, KeyPair>, dir: &Path, name: &str) -> (PathBuf, PathBuf) {
        let key = KeyPair::generate().unwrap();
        let cert = self.params().signed_by(&key, ca).unwrap();
        write_pair(dir, name, &cert.pem(), &key.serialize_pem())
    }
}

fn write_pair(dir: &Path, name: &str, cert: &str, key: &str) -> (PathBuf, PathBuf) {
    let (cert_path, key_path) = (
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&cert_path, cert).unwrap();
    std::fs::write(&key_path, key).unwrap();
    (cert_path, key_path)
}

/// A CA, its certificate as a PEM file in `dir`.
fn authority(dir: &Path, name: &str) -> (Issuer<'static, KeyPair>, PathBuf) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let key = KeyPair::generate().unwrap();
    let path = dir.join(format!("{name}.pem"));
    std::fs::write(&path, params.self_signed(&key).unwrap().pem()).unwrap();
    (Issuer::new(params, key), path)
}

/// `seekless pwned serve` over HTTPS with `cert` and `key`, killed on drop.
fn serve_tls(index: &Path, cert: &Path, key: &Path) -> Server {
    let utf8 = |path: &Path| path.to_str().expect("a UTF-8 path").to_string();
    let (index, cert, key) = (utf8(index), utf8(cert), utf8(key));
    Server::run(&[
        "-i",
        &index,
        "--tls-listen",
        "127.0.0.1:0",
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ])
}

/// `update` from `https://HOST:PORT/none` (which answers 404) with
/// `extra` flags, the machine's CA variables removed.
fn update(dir: &Path, host: &str, server: &Server, extra: &[&Path]) -> Output {
    let mut command = Command::new(SEEKLESS);
    command
        .args(["pwned", "update"])
        .arg(dir.join("out.idx"))
        .args([
            "--base-url",
            &format!("https://{host}:{}/none", server.port),
        ]);
    for path in extra {
        command.arg("--ca-cert").arg(path);
    }
    for name in [
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "https_proxy",
        "HTTPS_PROXY",
    ] {
        command.env_remove(name);
    }
    command.env("all_proxy", "").env("ALL_PROXY", "");
    command.output().unwrap()
}

/// What `update` said, asserting it went through TLS (the 404 after it).
fn got_through(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("range 00000: HTTP 404 Not Found (tried once)") && !text.contains("TLS"),
        "{text}"
    );
    text
}

/// What `update` said, asserting the certificate was refused at once,
/// in one line holding every piece of `says`.
fn refused(out: &Output, says: &[&str]) -> String {
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{text}");
    let line = text
        .lines()
        .find(|line| line.contains("TLS certificate refused"))
        .unwrap_or_else(|| panic!("no refusal: {text}"));
    assert!(line.contains("(tried once)"), "{line}");
    for piece in says {
        assert!(line.contains(piece), "{line}\nshould say {piece:?}");
    }
    line.to_string()
}

fn setup(what: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new(&format!("cli-update-tls-{what}"));
    let index = prepare_index(
        "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824\n",
        &dir.join("corpus.txt"),
        &dir.join("pwned.idx"),
    );
    (dir, index)
}

#[test]
fn a_self_signed_ca_certificate_given_by_ca_cert_is_trusted_as_curl_trusts_it() {
    let (dir, index) = setup("pinned");
    let (cert, key) = OPENSSL_X509.self_signed(&dir, "server");
    let server = serve_tls(&index, &cert, &key);
    // Exactly the server's own certificate, by either of its names, alone
    // or among other CAs.
    let (_, other) = authority(&dir, "other CA");
    got_through(&update(&dir, "localhost", &server, &[&cert]));
    got_through(&update(&dir, "127.0.0.1", &server, &[&other, &cert]));
    // Not given, or another one given: refused, saying what to do.
    let (lookalike, _) = OPENSSL_X509.self_signed(&dir, "lookalike");
    for given in [&[][..], &[lookalike.as_path()]] {
        refused(
            &update(&dir, "localhost", &server, given),
            &[
                "localhost presents a CA certificate (CA:TRUE",
                "give it with --ca-cert",
                "--tls-ca-dir",
            ],
        );
    }
}

#[test]
fn a_given_certificate_is_trusted_only_for_its_names_and_within_its_dates() {
    let (dir, index) = setup("pinned-bad");
    for (recipe, host, says) in [
        (
            Recipe {
                years: (2001, 2002),
                ..OPENSSL_X509
            },
            "localhost",
            &["the certificate of localhost expired on 2002-01-01T00:00:00Z (it is now 2"][..],
        ),
        (
            Recipe {
                years: (2090, 2091),
                ..OPENSSL_X509
            },
            "localhost",
            &["the certificate of localhost is not valid yet until 2090-01-01T00:00:00Z"],
        ),
        (
            Recipe {
                names: &["mirror.example", "10.1.2.3"],
                ..OPENSSL_X509
            },
            "localhost",
            &[
                "the certificate of localhost is not made for the name localhost \
                 (it holds mirror.example, 10.1.2.3)",
                "--tls-name localhost",
            ],
        ),
    ] {
        let (cert, key) = recipe.self_signed(&dir, "server");
        let server = serve_tls(&index, &cert, &key);
        refused(&update(&dir, host, &server, &[&cert]), says);
    }
}

#[test]
fn certificates_signed_by_a_ca_are_refused_in_plain_words() {
    let (dir, index) = setup("signed");
    let (ca, ca_path) = authority(&dir, "test CA");
    let (_, other) = authority(&dir, "other CA");
    let leaf = Recipe {
        ca: false,
        ..OPENSSL_X509
    };
    let (cert, key) = leaf.signed_by(&ca, &dir, "server");
    let server = serve_tls(&index, &cert, &key);
    got_through(&update(&dir, "localhost", &server, &[&ca_path]));
    refused(
        &update(&dir, "localhost", &server, &[&other]),
        &[
            "the certificate of localhost is signed by a CA this machine does not trust",
            "give that CA's certificate with --ca-cert FILE",
            "DIR/ca.pem",
        ],
    );
    drop(server);
    let expired = Recipe {
        years: (2001, 2002),
        ..leaf
    };
    let (cert, key) = expired.signed_by(&ca, &dir, "expired");
    let server = serve_tls(&index, &cert, &key);
    refused(
        &update(&dir, "localhost", &server, &[&ca_path]),
        &[
            "the certificate of localhost expired on 2002-01-01T00:00:00Z",
            "renew it on the server",
        ],
    );
    drop(server);
    let elsewhere = Recipe {
        names: &["mirror.example"],
        ..leaf
    };
    let (cert, key) = elsewhere.signed_by(&ca, &dir, "elsewhere");
    let server = serve_tls(&index, &cert, &key);
    refused(
        &update(&dir, "127.0.0.1", &server, &[&ca_path]),
        &[
            "the certificate of 127.0.0.1 is not made for the name 127.0.0.1 \
             (it holds mirror.example)",
            "use a name it holds in --base-url",
        ],
    );
}
