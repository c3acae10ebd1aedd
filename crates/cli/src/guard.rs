//! Outputs that would destroy inputs, refused before anything is read or
//! written: every command that writes a file asks here first.

use std::path::Path;

/// Refuses `output` when it is one of `inputs` (the same file by device and
/// inode, whatever name or link reaches it; by real path where there are no
/// inodes), or when it already exists inside an input directory (where it
/// would be read as input, or replace a file that is). Inputs that do not exist, and `-` (standard input), are skipped:
/// reading them reports its own error.
pub fn output_apart(output: &Path, inputs: &[&Path]) -> Result<(), String> {
    let Ok(out_meta) = std::fs::metadata(output) else {
        // Nothing there yet: nothing to destroy.
        return Ok(());
    };
    if out_meta.is_dir() {
        return Err(format!(
            "output {} is a directory; name a file",
            output.display()
        ));
    }
    let out_real = std::fs::canonicalize(output).unwrap_or_else(|_| output.to_path_buf());
    for &input in inputs {
        if input == Path::new("-") {
            continue;
        }
        let Ok(in_meta) = std::fs::metadata(input) else {
            continue;
        };
        let in_real = std::fs::canonicalize(input).unwrap_or_else(|_| input.to_path_buf());
        #[cfg(unix)]
        let same = same_file(&out_meta, &in_meta);
        #[cfg(not(unix))]
        let same = out_real == in_real;
        if same {
            return Err(format!(
                "output {} is the input {}; writing it would destroy the input (nothing was changed)",
                output.display(),
                input.display()
            ));
        }
        if in_meta.is_dir() && out_real.starts_with(&in_real) {
            return Err(format!(
                "output {} is inside the input directory {}; write it elsewhere (nothing was changed)",
                output.display(),
                input.display()
            ));
        }
    }
    Ok(())
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}
