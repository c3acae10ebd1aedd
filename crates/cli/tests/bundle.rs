//! `seekless pwned diff` and `update --from-bundle` as commands: outputs,
//! exit statuses, and a refused bundle leaving everything as it was.
#![cfg(feature = "update")]

use seekless_testkit::TempDir;

mod common;
use common::{prepare_index, run, snapshot};

const OLD: &str = "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:9545824\n\
    7C4A8D09CA3762AF61E59520943DC26494F8941B:37359195\n\
    B1B3773A05C0ED0176787A4F1574FF0075F7521E:4\n";
const NEW: &str = "5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:9545830\n\
    7C4A8D09CA3762AF61E59520943DC26494F8941B:37359195\n\
    21BD12DC183F740EE76F27B78EB39C8AD972A757:52579\n";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn diff_then_update_from_the_bundle_makes_the_new_index() {
    let dir = TempDir::new("cli-bundle-cli");
    let old = prepare_index(OLD, &dir.join("old.txt"), &dir.join("old.idx"));
    let new = prepare_index(NEW, &dir.join("new.txt"), &dir.join("new.idx"));
    let bundle = dir.join("changes.bundle");
    let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let out = run(
        &["pwned", "diff", &s(&old), &s(&new), "-o", &s(&bundle)],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Three ranges changed: one recounted, one gone, one new.
    assert!(
        text(&out.stdout).contains("3 ranges changed"),
        "{}",
        text(&out.stdout)
    );

    let copy = dir.join("copy.idx");
    std::fs::copy(&old, &copy).unwrap();
    let out = run(
        &["pwned", "update", &s(&copy), "--from-bundle", &s(&bundle)],
        b"",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("updated") && said.contains("3 changed"),
        "{said}"
    );
    assert!(
        said.contains("1 added, 1 removed, 1 counts changed"),
        "{said}"
    );
    let export = |p: &std::path::Path| run(&["pwned", "export", &s(p)], b"").stdout;
    assert_eq!(export(&copy), export(&new));

    // Applied again: the index is no longer the one it was made for.
    let before = snapshot(&dir);
    let out = run(
        &["pwned", "update", &s(&copy), "--from-bundle", &s(&bundle)],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("seekless: bundle refused: "), "{stderr}");
    assert!(stderr.contains("a bundle for another index"), "{stderr}");
    assert_eq!(snapshot(&dir), before);
    // A bundle of SHA-1 indexes given to an NTLM update.
    let out = run(
        &[
            "pwned",
            "update",
            "--ntlm",
            &s(&dir.join("n.idx")),
            "--from-bundle",
            &s(&bundle),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("a bundle of SHA-1 indexes, not NTLM"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.join("n.idx").exists());
    // The network flags do not go with a bundle.
    let out = run(
        &[
            "pwned",
            "update",
            &s(&copy),
            "--from-bundle",
            &s(&bundle),
            "--full",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    // diff never writes over its inputs.
    let out = run(&["pwned", "diff", &s(&old), &s(&new), "-o", &s(&old)], b"");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(snapshot(&dir), before);
}
