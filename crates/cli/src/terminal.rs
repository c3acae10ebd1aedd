//! Typing on a terminal without the terminal showing it.

/// While alive, the terminal on standard input does not echo what is typed
/// (newlines still show, so answers start on their own lines). Restored
/// when dropped, and when SIGINT or SIGTERM ends the process.
#[derive(Debug)]
pub struct NoEcho {
    #[cfg(unix)]
    restore: Option<libc::termios>,
}

/// The terminal's settings before echo was turned off, for the signal
/// handler to put back.
#[cfg(unix)]
static ORIGINAL: std::sync::OnceLock<libc::termios> = std::sync::OnceLock::new();

#[cfg(unix)]
extern "C" fn restore_and_die(signal: libc::c_int) {
    if let Some(original) = ORIGINAL.get() {
        // SAFETY: tcsetattr, signal and raise are async-signal-safe; the
        // settings were stored before the handler was installed.
        unsafe {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, original);
        }
    }
    // SAFETY: as above; the default action then ends the process.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

impl NoEcho {
    /// Turns echo off on standard input's terminal (nothing happens where
    /// that fails, or off Unix).
    pub fn new() -> NoEcho {
        #[cfg(unix)]
        {
            // SAFETY: an all-zero termios is a valid value to be filled in.
            let mut settings: libc::termios = unsafe { std::mem::zeroed() };
            // SAFETY: tcgetattr writes into `settings`, which outlives it.
            if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut settings) } != 0 {
                return NoEcho { restore: None };
            }
            let original = *ORIGINAL.get_or_init(|| settings);
            let handler = restore_and_die as extern "C" fn(libc::c_int) as libc::sighandler_t;
            // SAFETY: installs a handler that only makes async-signal-safe
            // calls.
            unsafe {
                libc::signal(libc::SIGINT, handler);
                libc::signal(libc::SIGTERM, handler);
            }
            let mut quiet = original;
            quiet.c_lflag &= !libc::ECHO;
            quiet.c_lflag |= libc::ECHONL;
            // SAFETY: sets the terminal from a termios read from it.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &quiet) };
            NoEcho {
                restore: Some(original),
            }
        }
        #[cfg(not(unix))]
        NoEcho {}
    }
}

impl Drop for NoEcho {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(original) = &self.restore {
            // SAFETY: puts back the settings read in `new`.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, original) };
        }
    }
}
