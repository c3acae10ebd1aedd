//! Progress bars shared by every command: drawn on a terminal, hidden otherwise.
// Each engine uses some of these; a build with only some engines uses fewer.
#![allow(dead_code)]

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar counting bytes, drawn to stderr only when it is a terminal.
pub fn bytes(total: u64, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg:>10} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
        .expect("valid progress template")
        .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

/// A spinner counting items (when the total is unknown), drawn only on a terminal.
pub fn items(what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {pos} {per_sec}")
            .expect("valid progress template"),
    );
    bar.set_message(what.to_string());
    bar
}

/// A progress bar counting items of a known total (`what` names them), with
/// a message the caller keeps current; drawn only on a terminal.
pub fn counted(total: u64, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "[{{bar:30}}] {{pos}}/{{len}} {what} {{msg}} {{per_sec}} eta {{eta}}"
        ))
        .expect("valid progress template")
        .progress_chars("=> "),
    );
    bar
}
