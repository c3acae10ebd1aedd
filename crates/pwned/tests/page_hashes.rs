//! The check page's own hashing (`src/serve/check.html`) against Rust's: its
//! SHA-1 of UTF-8 (used where the browser offers no WebCrypto) and its MD4
//! of UTF-16LE (NTLM) give the same digests as the `sha1` and `md4` crates,
//! on empty input, every length around the 64-byte blocks' padding
//! boundaries, inputs of many blocks and non-ASCII text (emoji, CJK).
//!
//! The page's script runs under node, as it is in the page, with just
//! enough of a document for it to start. Skipped, saying so, when node is
//! not installed, unless `SEEKLESS_REQUIRE_NODE=1` (CI sets it where node
//! is installed).

use std::io::Write;
use std::process::{Command, Stdio};

use md4::Md4;
use sha1::{Digest, Sha1};

const PAGE: &str = include_str!("../src/serve/check.html");

/// Uppercase hex, as the page writes digests.
fn hex_upper(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

/// `text` as a JavaScript string literal: every UTF-16 unit but printable
/// ASCII escaped, so the script sees exactly these characters.
fn js_string(text: &str) -> String {
    let mut out = String::from("\"");
    for unit in text.encode_utf16() {
        match u8::try_from(unit) {
            Ok(byte @ b' '..=b'~') if byte != b'"' && byte != b'\\' => out.push(char::from(byte)),
            _ => out.push_str(&format!("\\u{unit:04x}")),
        }
    }
    out.push('"');
    out
}

/// The inputs: lengths 0 to 200 bytes, the padding boundaries reached with
/// two-, three- and four-byte characters, long inputs, and pseudo-random
/// mixes of ASCII and non-ASCII.
fn inputs() -> Vec<String> {
    let mut inputs: Vec<String> = (0..=200)
        .map(|n| {
            (0..n)
                .map(|i| char::from(b' ' + (i * 7 % 95) as u8))
                .collect()
        })
        .collect();
    for wide in ['é', '€', '中', '😀'] {
        for bytes in [55, 56, 63, 64, 65, 119, 120, 127, 128, 129] {
            let mut text = wide.to_string().repeat(bytes / wide.len_utf8());
            while text.len() < bytes {
                text.push('a');
            }
            assert_eq!(text.len(), bytes);
            inputs.push(text);
        }
    }
    inputs.push("a".repeat(1_000_000));
    inputs.push("密码🔒Pässwort-".repeat(700));
    inputs.push("😀".repeat(1000));
    let pool: Vec<char> =
        "aZ09 !\"\\\n\0ßé€中文字😀🔒\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}\u{10ffff}"
            .chars()
            .collect();
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = |below: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % below as u64) as usize
    };
    for _ in 0..300 {
        let length = next(150);
        inputs.push((0..length).map(|_| pool[next(pool.len())]).collect());
    }
    inputs
}

/// Whether node runs; if not, says why the test is skipped (or fails when
/// `SEEKLESS_REQUIRE_NODE` is set).
fn node_available() -> bool {
    let found = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !found {
        assert!(
            std::env::var_os("SEEKLESS_REQUIRE_NODE").is_none(),
            "SEEKLESS_REQUIRE_NODE is set but node does not run"
        );
        eprintln!(
            "skipped: node is needed to run the check page's script (apt-get install nodejs)"
        );
    }
    found
}

#[test]
fn the_page_hashes_as_rust_does() {
    if !node_available() {
        return;
    }
    let script =
        &PAGE[PAGE.find("<script>").unwrap() + "<script>".len()..PAGE.find("</script>").unwrap()];
    // The script is one function that runs at once: the checks go at its
    // end, inside it, where its hash functions are in scope.
    let end = script
        .rfind("})();")
        .expect("the page's script is one function called at once: (function () { … })();");
    let inputs = inputs();
    let list: Vec<String> = inputs.iter().map(|text| js_string(text)).collect();
    let checks = format!(
        "for (const text of [{}]) {{\n\
         const utf8 = new TextEncoder().encode(text);\n\
         process.stdout.write(hex(sha1Script(utf8)) + \" \" + hex(md4(utf16le(text))) + \"\\n\");\n\
         }}\n",
        list.join(",")
    );
    let program = format!(
        "\"use strict\";\n\
         const element = () => ({{ addEventListener() {{}} }});\n\
         const document = {{ body: {{ dataset: {{}} }}, getElementById: element }};\n\
         const location = {{ pathname: \"/\" }};\n\
         {}{checks}{}",
        &script[..end],
        &script[end..]
    );
    let mut node = Command::new("node")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    node.stdin
        .take()
        .unwrap()
        .write_all(program.as_bytes())
        .unwrap();
    let out = node.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), inputs.len(), "one line an input");
    for (text, line) in inputs.iter().zip(lines) {
        let utf16le: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let expected = format!(
            "{} {}",
            hex_upper(&Sha1::digest(text.as_bytes())),
            hex_upper(&Md4::digest(&utf16le))
        );
        let shown: String = text.chars().take(40).collect();
        assert_eq!(line, expected, "{} bytes: {shown:?}…", text.len());
    }
}
