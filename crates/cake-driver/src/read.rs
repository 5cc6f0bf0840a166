//! Reading a schedule file: the one rule every front door that opens a path follows (the CLI,
//! the Python extension, the MCP server). Only a regular file of at most
//! [`MAX_SCHEDULE_BYTES`] is read; a FIFO, a device or a directory is refused before it is
//! opened for reading (a FIFO would block forever), and a large file before it is read whole.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// The largest schedule file a front door reads: 4 MiB, a thousand times the largest example.
pub const MAX_SCHEDULE_BYTES: u64 = 4 << 20;

/// Why a schedule file was not read.
#[derive(Debug)]
pub enum ReadError {
    /// Opening, inspecting or reading it failed.
    Io(std::io::Error),
    /// The path names something other than a regular file; `what` says what it is.
    NotAFile { what: &'static str },
    /// The file is larger than [`MAX_SCHEDULE_BYTES`]; `bytes` is its size, or the cap plus
    /// one when it grew while being read.
    TooLarge { bytes: u64 },
}

impl ReadError {
    /// The closest `std::io::ErrorKind`, for callers that map errors by kind (Python's
    /// `FileNotFoundError`, `PermissionError`, ...).
    pub fn kind(&self) -> std::io::ErrorKind {
        match self {
            ReadError::Io(e) => e.kind(),
            ReadError::NotAFile {
                what: "a directory",
            } => std::io::ErrorKind::IsADirectory,
            ReadError::NotAFile { .. } => std::io::ErrorKind::InvalidInput,
            ReadError::TooLarge { .. } => std::io::ErrorKind::FileTooLarge,
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::NotAFile { what } => {
                write!(f, "it is {what}, not a regular file")
            }
            ReadError::TooLarge { bytes } => write!(
                f,
                "it is {bytes} bytes, more than the {MAX_SCHEDULE_BYTES} bytes (4 MiB) a schedule may have"
            ),
        }
    }
}

impl std::error::Error for ReadError {}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::Io(e)
    }
}

/// Reads the schedule file at `path`: a regular file of at most [`MAX_SCHEDULE_BYTES`].
pub fn read_schedule(path: &Path) -> Result<Vec<u8>, ReadError> {
    // `metadata` follows links without opening: a FIFO is refused before `open` could block.
    check_kind(&std::fs::metadata(path)?)?;
    let file = open_nonblocking(path)?;
    // The path may have changed in between: judge what was opened.
    let meta = file.metadata()?;
    check_kind(&meta)?;
    let mut bytes = Vec::with_capacity(meta.len().min(MAX_SCHEDULE_BYTES) as usize);
    // One byte past the cap tells a file that grew from one that fits.
    file.take(MAX_SCHEDULE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SCHEDULE_BYTES {
        return Err(ReadError::TooLarge {
            bytes: meta.len().max(MAX_SCHEDULE_BYTES + 1),
        });
    }
    Ok(bytes)
}

fn check_kind(meta: &std::fs::Metadata) -> Result<(), ReadError> {
    let t = meta.file_type();
    if !t.is_file() {
        return Err(ReadError::NotAFile { what: describe(t) });
    }
    if meta.len() > MAX_SCHEDULE_BYTES {
        return Err(ReadError::TooLarge { bytes: meta.len() });
    }
    Ok(())
}

fn describe(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

/// Opens for reading without blocking on a FIFO swapped in after the check (`O_NONBLOCK`
/// changes nothing for a regular file).
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK on Linux (every architecture but alpha, mips, parisc and sparc, where
        // Rust's std does not run as a host of this tool).
        options.custom_flags(0o4000);
    }
    options.open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("cake-read-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn reads_a_regular_file() {
        let dir = tmp("ok");
        let p = dir.join("k.py");
        std::fs::write(&p, "import cake\n").unwrap();
        assert_eq!(read_schedule(&p).unwrap(), b"import cake\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_a_directory_and_a_missing_file() {
        let dir = tmp("dir");
        let e = read_schedule(&dir).unwrap_err();
        assert!(
            matches!(
                e,
                ReadError::NotAFile {
                    what: "a directory"
                }
            ),
            "{e}"
        );
        let e = read_schedule(&dir.join("missing.py")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn refuses_a_file_over_the_cap_without_reading_it() {
        let dir = tmp("big");
        let p = dir.join("big.py");
        // Sparse: the size says it all, nothing is read.
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(64 << 30).unwrap();
        let e = read_schedule(&p).unwrap_err();
        assert!(
            matches!(e, ReadError::TooLarge { bytes } if bytes == 64 << 30),
            "{e}"
        );
        assert!(e.to_string().contains("4 MiB"), "{e}");
        // Exactly at the cap is fine.
        f.set_len(MAX_SCHEDULE_BYTES).unwrap();
        assert_eq!(read_schedule(&p).unwrap().len() as u64, MAX_SCHEDULE_BYTES);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn refuses_a_fifo_and_a_device_without_blocking() {
        let dir = tmp("fifo");
        let p = dir.join("pipe.py");
        let made = std::process::Command::new("mkfifo").arg(&p).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let e = read_schedule(&p).unwrap_err();
        assert!(matches!(e, ReadError::NotAFile { what: "a FIFO" }), "{e}");
        let e = read_schedule(Path::new("/dev/zero")).unwrap_err();
        assert!(matches!(e, ReadError::NotAFile { what: "a device" }), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
