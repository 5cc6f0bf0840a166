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
