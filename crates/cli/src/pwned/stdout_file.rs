//! Standard output redirected to a regular file (`> out.txt`): where the
//! command's output began in it, so that a command failing part-way (a
//! full disk) cuts the file back and leaves no partial output.

use std::fs::File;

/// Where standard output's file stood when the command began writing, when
/// it is a regular file.
pub struct Start(Option<(File, u64)>);

impl Start {
    /// Standard output's file and the offset the command's output begins
    /// at: the end for a file opened to append (`>>`), the current offset
    /// otherwise. Nothing for a pipe or a terminal.
    pub fn now() -> Start {
        Start(Start::open())
    }

    #[cfg(unix)]
    fn open() -> Option<(File, u64)> {
        use std::io::Seek;
        use std::os::fd::AsFd;
        let mut file = File::from(std::io::stdout().as_fd().try_clone_to_owned().ok()?);
        let meta = file.metadata().ok()?;
        if !meta.is_file() {
            return None;
        }
        // SAFETY: F_GETFL reads the flags of descriptor 1, open for the
        // call; no memory is passed.
        let flags = unsafe { libc::fcntl(1, libc::F_GETFL) };
        let start = if flags >= 0 && flags & libc::O_APPEND != 0 {
            meta.len()
        } else {
            file.stream_position().ok()?
        };
        Some((file, start))
    }

    /// On Windows a file opened to append (`>>` in cmd.exe) is positioned
    /// at its end already.
    #[cfg(windows)]
    fn open() -> Option<(File, u64)> {
        use std::io::Seek;
        use std::os::windows::io::AsHandle;
        let mut file = File::from(std::io::stdout().as_handle().try_clone_to_owned().ok()?);
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let start = file.stream_position().ok()?;
        Some((file, start))
    }

    #[cfg(not(any(unix, windows)))]
    fn open() -> Option<(File, u64)> {
        None
    }

    /// Standard output's file, to write to directly: past the standard
    /// library's buffer, which would write what it holds when the process
    /// ends, after the file was cut back.
    pub fn file(&self) -> Option<&File> {
        self.0.as_ref().map(|(file, _)| file)
    }

    /// Cuts the file back to where the output began; a note for the error
    /// message saying what became of the partial output.
    pub fn restore(self) -> &'static str {
        match self.0 {
            Some((file, start)) if file.set_len(start).is_ok() => {
                " (the partial output was removed)"
            }
            Some(_) => " (the partial output could not be removed)",
            None => "",
        }
    }
}
