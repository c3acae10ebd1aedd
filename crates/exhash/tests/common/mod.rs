//! What the integration tests share.

use seekless_testkit::TempDir;

/// A fresh directory for a test's table file (removed on drop), and the
/// file's path in it.
pub fn scratch(name: &str) -> (TempDir, std::path::PathBuf) {
    let dir = TempDir::new(&format!("exhash-{name}"));
    let path = dir.join("t.exh");
    (dir, path)
}
