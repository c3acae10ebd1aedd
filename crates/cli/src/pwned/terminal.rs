//! Typing on a terminal without the terminal showing it.

/// While alive, the terminal on standard input does not echo what is typed
/// (newlines still show, so answers start on their own lines). Restored
/// when dropped, and when SIGINT or SIGTERM (on Windows: Ctrl-C, Ctrl-Break
/// or the console closing) ends the process.
#[derive(Debug)]
pub struct NoEcho {
    #[cfg(unix)]
    restore: Option<libc::termios>,
    #[cfg(windows)]
    restore: Option<u32>,
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
    /// Turns echo off on standard input's terminal or console (nothing
    /// happens where that fails).
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
        #[cfg(windows)]
        {
            use windows_sys::Win32::System::Console::{
                ENABLE_ECHO_INPUT, GetConsoleMode, GetStdHandle, STD_INPUT_HANDLE,
                SetConsoleCtrlHandler, SetConsoleMode,
            };
            let mut mode = 0;
            // SAFETY: GetStdHandle takes a constant; GetConsoleMode writes
            // into `mode`, which outlives the call, and fails on anything
            // but a console.
            if unsafe { GetConsoleMode(GetStdHandle(STD_INPUT_HANDLE), &mut mode) } == 0 {
                return NoEcho { restore: None };
            }
            let original = *CONSOLE_MODE.get_or_init(|| mode);
            // SAFETY: installs a handler that only resets the console mode;
            // the mode was stored before.
            unsafe { SetConsoleCtrlHandler(Some(restore_console), 1) };
            // Line input stays on (Enter ends the password, Backspace
            // edits it); only the echo goes.
            // SAFETY: sets the console's mode from one read from it.
            unsafe {
                SetConsoleMode(
                    GetStdHandle(STD_INPUT_HANDLE),
                    original & !ENABLE_ECHO_INPUT,
                )
            };
            NoEcho {
                restore: Some(original),
            }
        }
        #[cfg(not(any(unix, windows)))]
        NoEcho {}
    }
}

/// The console's input mode before echo was turned off, for the console
/// control handler to put back.
#[cfg(windows)]
static CONSOLE_MODE: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// Puts the console's mode back, then lets the next handler (the default:
/// end the process) act.
#[cfg(windows)]
unsafe extern "system" fn restore_console(_event: u32) -> windows_sys::core::BOOL {
    use windows_sys::Win32::System::Console::{GetStdHandle, STD_INPUT_HANDLE, SetConsoleMode};
    if let Some(&original) = CONSOLE_MODE.get() {
        // SAFETY: sets the console's mode to the one read in `new`.
        unsafe { SetConsoleMode(GetStdHandle(STD_INPUT_HANDLE), original) };
    }
    0
}

impl Drop for NoEcho {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(original) = &self.restore {
            // SAFETY: puts back the settings read in `new`.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, original) };
        }
        #[cfg(windows)]
        if let Some(original) = self.restore {
            use windows_sys::Win32::System::Console::{
                GetStdHandle, STD_INPUT_HANDLE, SetConsoleMode,
            };
            // SAFETY: puts back the mode read in `new`.
            unsafe { SetConsoleMode(GetStdHandle(STD_INPUT_HANDLE), original) };
        }
    }
}
