//! What the integration tests share.

/// A fresh directory for a test's table file, and the file's path in it.
pub fn scratch(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("exhash-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.exh");
    let _ = std::fs::remove_file(&path);
    (dir, path)
}
