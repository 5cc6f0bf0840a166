//! What a client may make the server do: the limits of one tool call, the size of inputs, and
//! the paths it may read and write (docs/agents.md, "Limits").

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The largest schedule a tool reads, as a file or as `source` text: the same cap as every
/// other front door's.
pub const MAX_INPUT_BYTES: u64 = cake_driver::MAX_SCHEDULE_BYTES;

/// The longest request line the server reads; a longer one is answered with a JSON-RPC error.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// The server's limits, set by the flags of `cake mcp`.
#[derive(Clone, Debug)]
pub struct Config {
    /// Wall-clock limit of one call of `check`, `explain`, `lower`, `cost`, `build`,
    /// `evolve_status` (`--timeout`).
    pub timeout: Duration,
    /// Wall-clock limit of one `test` or `bench` call (`--eval-timeout`).
    pub eval_timeout: Duration,
    /// Address-space limit, in bytes, of each tool process (`--memory`).
    pub memory: u64,
    /// Directories the tools may read and write besides the working directory (`--allow`).
    pub allow: Vec<PathBuf>,
    /// The executable run as `EXE mcp-worker` for each call; `None` runs the tools in this
    /// process, where a timeout answers the client but cannot stop the work (library tests).
    pub worker: Option<PathBuf>,
    /// How many tool processes run at once; later calls wait (`--jobs`).
    pub jobs: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            timeout: Duration::from_secs(120),
            eval_timeout: Duration::from_secs(1800),
            memory: 4 << 30,
            allow: Vec::new(),
            worker: None,
            jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
        }
    }
}

/// A byte size as `cake mcp --memory` takes it: `4G`, `512M`, `65536K` or plain bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let shift = match unit
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return Err(format!("`{s}` is not a size: write e.g. 4G, 512M or bytes")),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{s}` is not a size: write e.g. 4G, 512M or bytes"))?;
    n.checked_mul(1 << shift)
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("`{s}` is not a usable size"))
}

/// Where the tools may read and write: canonical directories (symlinks resolved).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Policy {
    pub roots: Vec<PathBuf>,
}

impl Policy {
    /// The working directory plus `allow`; each must exist.
    pub fn new(allow: &[PathBuf]) -> Result<Policy, String> {
        let cwd = std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?;
        let mut roots = vec![cwd.canonicalize().unwrap_or(cwd)];
        for dir in allow {
            let c = dir
                .canonicalize()
                .map_err(|e| format!("--allow {}: {e}", dir.display()))?;
            if !c.is_dir() {
                return Err(format!("--allow {}: not a directory", dir.display()));
            }
            roots.push(c);
        }
        Ok(Policy { roots })
    }

    fn inside(&self, p: &Path) -> bool {
        self.roots.iter().any(|r| p.starts_with(r))
    }

    fn refuse(&self, shown: &str, verb: &str) -> String {
        let roots: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
        format!(
            "path policy: `{shown}` is outside the directories this server may {verb} ({}); \
             start `cake mcp --allow DIR` to add one (docs/agents.md)",
            roots.join(", ")
        )
    }

    /// An existing path the tool will read: its canonical form, when it lies inside a root.
    pub fn readable(&self, shown: &str) -> Result<PathBuf, String> {
        let real = Path::new(shown).canonicalize().map_err(|e| {
            format!(
                "cannot read {shown}: {e} (relative paths are resolved against {})",
                cwd()
            )
        })?;
        if !self.inside(&real) {
            return Err(self.refuse(shown, "read"));
        }
        Ok(real)
    }

    /// A directory the tool will create or write into: checked before anything is created.
    /// The part that exists is canonicalized; the rest may not climb out with `..`.
    pub fn writable_dir(&self, shown: &str) -> Result<PathBuf, String> {
        let p = std::path::absolute(shown).map_err(|e| format!("{shown}: {e}"))?;
        let mut existing = p.as_path();
        let mut rest = Vec::new();
        while !existing.exists() {
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_owned());
                    existing = parent;
                }
                _ => return Err(self.refuse(shown, "write")),
            }
        }
        if p.components()
            .skip(existing.components().count())
            .any(|c| c == Component::ParentDir)
        {
            return Err(self.refuse(shown, "write"));
        }
        let mut real = existing
            .canonicalize()
            .map_err(|e| format!("{shown}: {e}"))?;
        real.extend(rest.iter().rev());
        if !self.inside(&real) {
            return Err(self.refuse(shown, "write"));
        }
        Ok(real)
    }

    /// A schedule file's bytes: inside a root, a regular file, at most [`MAX_INPUT_BYTES`].
    pub fn read_schedule(&self, shown: &str) -> Result<Vec<u8>, String> {
        let real = self.readable(shown)?;
        cake_driver::read_schedule(&real).map_err(|e| match e {
            cake_driver::ReadError::Io(e) => format!("cannot read {shown}: {e}"),
            limit => format!("cannot read {shown}: input limit: {limit}"),
        })
    }
}

/// The server's working directory, for messages.
pub fn cwd() -> String {
    std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|_| "the server's working directory".into())
}

/// A regular file of at most `cap` bytes (by its metadata).
pub fn check_regular(meta: &std::fs::Metadata, cap: u64) -> Result<(), String> {
    if !meta.is_file() {
        let kind = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a device, FIFO or socket)"
        };
        return Err(format!("input limit: it is {kind}; give a regular file"));
    }
    if meta.len() > cap {
        return Err(too_big(cap));
    }
    Ok(())
}

fn too_big(cap: u64) -> String {
    format!("input limit: it is larger than {} MiB", cap >> 20)
}

/// `source` text within [`MAX_INPUT_BYTES`].
pub fn check_source(s: &str) -> Result<(), String> {
    if s.len() as u64 > MAX_INPUT_BYTES {
        return Err(format!(
            "input limit: `source` is {} bytes, over the {} MiB limit; give a smaller schedule",
            s.len(),
            MAX_INPUT_BYTES >> 20
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("512m"), Ok(512 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("0").is_err());
        assert!(parse_size("4T").is_err());
        assert!(parse_size("G").is_err());
    }

    #[test]
    fn writable_dirs_stay_inside_the_roots() {
        let root = std::env::temp_dir()
            .canonicalize()
            .unwrap()
            .join(format!("cake-mcp-policy-{}", std::process::id()));
        std::fs::create_dir_all(root.join("a")).unwrap();
        let p = Policy {
            roots: vec![root.clone()],
        };
        let s = |p: PathBuf| p.display().to_string();
        assert_eq!(
            p.writable_dir(&s(root.join("a/b/c"))).unwrap(),
            root.join("a/b/c")
        );
        assert!(p.writable_dir(&s(root.join("a/../b"))).is_ok());
        for bad in [
            root.join("a/x/../../.."),
            root.join(".."),
            PathBuf::from("/etc/x"),
        ] {
            let e = p.writable_dir(&s(bad.clone())).unwrap_err();
            assert!(e.starts_with("path policy:"), "{}: {e}", bad.display());
        }
        std::os::unix::fs::symlink("/etc", root.join("out")).unwrap();
        assert!(p.writable_dir(&s(root.join("out/cake"))).is_err());
        assert!(p.readable(&s(root.join("out/passwd"))).is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
