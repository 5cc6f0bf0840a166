//! The command's output on stdout. `println!` panics when the reader has gone away (`cake
//! explain | head`); these end the program quietly instead, as a program killed by SIGPIPE
//! would, without restoring SIGPIPE (which would also kill cake when it writes to a worker
//! that has exited, an error it reports).

use std::io::Write;

/// Write to stdout; a closed pipe ends the program with status 0, another error with 2.
pub fn write_stdout(text: &str) {
    if let Err(e) = std::io::stdout().lock().write_all(text.as_bytes()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(2);
    }
}

/// `print!` to stdout through [`write_stdout`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write_stdout(&format!($($arg)*)) };
}

/// `println!` to stdout through [`write_stdout`].
macro_rules! outln {
    () => { $crate::output::write_stdout("\n") };
    ($($arg:tt)*) => { $crate::output::write_stdout(&(format!($($arg)*) + "\n")) };
}

/// Write `body` to `path` through a temporary file renamed into place, so a kill never leaves
/// half a file behind; an error is printed and becomes exit status 2.
pub fn write_atomically(path: &std::path::Path, body: &str) -> Result<(), std::process::ExitCode> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, body)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| {
            eprintln!("error: cannot write {}: {e}", path.display());
            std::process::ExitCode::from(2)
        })
}
