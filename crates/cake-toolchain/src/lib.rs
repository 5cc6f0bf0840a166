//! The NVIDIA toolchain: discovery (CUDA_HOME, PATH, a Cake checkout's `.toolchain/`, or the
//! pip-installed `nvidia-cuda-nvcc` package; [`Search::locate`] gives the order), compilation
//! for exactly one target, `ptxas -v` resource reports, and a content-addressed build cache.

mod report;

pub use report::{parse_ptxas, KernelResources};

use cake_target::Target;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Clone, Debug)]
pub struct Toolchain {
    pub nvcc: PathBuf,
    /// `nvcc --version`'s release line, part of every cache key.
    pub version: String,
}

#[derive(Debug)]
pub enum ToolchainError {
    /// `tried`: every place looked at, in order; `fix`: the one command that installs nvcc
    /// where discovery finds it.
    NotFound {
        tried: Vec<String>,
        fix: String,
    },
    Io(String),
    Compile {
        log: String,
    },
}

impl std::fmt::Display for ToolchainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolchainError::NotFound { tried, fix } => write!(
                f,
                "no nvcc found. Looked in, in order:\n  {}\nFix: {fix}",
                tried.join("\n  ")
            ),
            ToolchainError::Io(e) => write!(f, "{e}"),
            ToolchainError::Compile { log } => write!(f, "nvcc failed:\n{log}"),
        }
    }
}

impl std::error::Error for ToolchainError {}

/// The pinned CUDA packages, kept in one place: compiled in so the hint never drifts from what
/// `scripts/toolchain.sh` installs.
const CUDA_REQUIREMENTS: &str = include_str!("../../../.ci/cuda-requirements.txt");

/// `python3 -m pip install <every pin in .ci/cuda-requirements.txt>`.
pub fn pip_install_command() -> String {
    let pins: Vec<&str> = CUDA_REQUIREMENTS
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .collect();
    format!("python3 -m pip install {}", pins.join(" "))
}

/// Where the pinned toolchain lives inside a Cake checkout (`scripts/toolchain.sh` puts it there).
pub const CHECKOUT_TOOLCHAIN: &str = ".toolchain/nvidia/cu13";

/// A directory is a Cake checkout when it has the toolchain script and the pins it installs.
fn is_checkout(dir: &Path) -> bool {
    dir.join("scripts/toolchain.sh").is_file() && dir.join(".ci/cuda-requirements.txt").is_file()
}

/// The Cake checkouts at or above each start directory (the nearest one per start), without
/// duplicates, in the order of the starts.
pub fn find_checkouts(starts: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for start in starts {
        let start = start.canonicalize().unwrap_or_else(|_| start.clone());
        if let Some(root) = start.ancestors().find(|d| is_checkout(d)) {
            if !out.iter().any(|o| o == root) {
                out.push(root.to_path_buf());
            }
        }
    }
    out
}

/// Everything discovery consults, read from the environment once by [`Search::from_env`]; tests
/// build one by hand.
#[derive(Clone, Debug, Default)]
pub struct Search {
    /// `$CUDA_HOME` (unset or empty: `None`).
    pub cuda_home: Option<PathBuf>,
    /// Every `$PATH` entry, in order.
    pub path: Vec<PathBuf>,
    /// Where to look for a Cake checkout, walking upward from each.
    pub checkout_starts: Vec<PathBuf>,
    /// Python's site-packages and `sys.path` directories (for the pip packages).
    pub site_dirs: Vec<PathBuf>,
}

impl Search {
    /// The real environment. Checkouts are looked for above the running executable (a `cake`
    /// in `target/release/`), above the current directory (an installed `cake` run inside a
    /// checkout), and above the checkout this crate was built from (`cargo install --path`).
    pub fn from_env() -> Search {
        let mut checkout_starts = Vec::new();
        if let Some(dir) = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf))
        {
            checkout_starts.push(dir);
        }
        if let Ok(dir) = std::env::current_dir() {
            checkout_starts.push(dir);
        }
        checkout_starts.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")));
        Search {
            cuda_home: std::env::var_os("CUDA_HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            path: std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).collect())
                .unwrap_or_default(),
            checkout_starts,
            site_dirs: python_site_dirs(),
        }
    }

    /// Find nvcc, in this order: `$CUDA_HOME/bin/nvcc`; `nvcc` in each `$PATH` entry; a Cake
    /// checkout's `.toolchain/nvidia/cu13/bin/nvcc`; the pip package (`nvidia/cu13/bin/nvcc`
    /// or `nvidia/cuda_nvcc/bin/nvcc` under a Python path). Explicit settings come first, the
    /// pinned checkout toolchain before whatever pip put into the interpreter.
    pub fn locate(&self) -> Result<PathBuf, ToolchainError> {
        let checkouts = find_checkouts(&self.checkout_starts);
        let mut candidates: Vec<(&str, PathBuf)> = Vec::new();
        let mut tried = Vec::new();
        match &self.cuda_home {
            Some(home) => candidates.push(("CUDA_HOME", home.join("bin/nvcc"))),
            None => tried.push("CUDA_HOME: not set".to_string()),
        }
        for dir in &self.path {
            candidates.push(("PATH", dir.join("nvcc")));
        }
        for root in &checkouts {
            candidates.push((
                "Cake checkout",
                root.join(CHECKOUT_TOOLCHAIN).join("bin/nvcc"),
            ));
        }
        for dir in &self.site_dirs {
            for sub in ["nvidia/cu13/bin/nvcc", "nvidia/cuda_nvcc/bin/nvcc"] {
                candidates.push(("pip package", dir.join(sub)));
            }
        }
        // A directory named twice (PATH often repeats one) is searched and listed once.
        let mut seen = std::collections::HashSet::new();
        candidates.retain(|(_, p)| seen.insert(p.clone()));
        for (how, p) in candidates {
            if p.is_file() {
                return Ok(p);
            }
            tried.push(format!("{how}: {}", p.display()));
        }
        if checkouts.is_empty() {
            let starts: Vec<String> = self
                .checkout_starts
                .iter()
                .map(|s| s.display().to_string())
                .collect();
            tried.push(format!(
                "Cake checkout: none at or above {}",
                starts.join(", ")
            ));
        }
        let fix = match checkouts.first() {
            Some(root) => format!(
                "{}\n  (installs the pinned compile-only CUDA toolchain into {}, where cake finds \
                 it without CUDA_HOME; or set CUDA_HOME to a CUDA 13 toolkit)",
                root.join("scripts/toolchain.sh").display(),
                root.join(CHECKOUT_TOOLCHAIN).display()
            ),
            None => format!(
                "{}\n  (the pinned compile-only CUDA toolchain, found in that Python's \
                 site-packages; or set CUDA_HOME to a CUDA 13 toolkit)",
                pip_install_command()
            ),
        };
        Err(ToolchainError::NotFound { tried, fix })
    }
}

/// Python's package directories, from `python3` (else `python`); only existing directories.
fn python_site_dirs() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for python in ["python3", "python"] {
        let Ok(o) = Command::new(python)
            .args(["-c", "import sys, site; print('\\n'.join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))"])
            .output()
        else {
            continue;
        };
        for dir in String::from_utf8_lossy(&o.stdout).lines() {
            let dir = PathBuf::from(dir);
            if !dir.as_os_str().is_empty() && dir.is_dir() && !out.contains(&dir) {
                out.push(dir);
            }
        }
        break;
    }
    out
}

impl Toolchain {
    /// Find nvcc in the real environment; [`Search::locate`] gives the order.
    pub fn discover() -> Result<Toolchain, ToolchainError> {
        Self::discover_in(&Search::from_env())
    }

    /// Find nvcc as `search` says and read its version.
    pub fn discover_in(search: &Search) -> Result<Toolchain, ToolchainError> {
        let nvcc = search.locate()?;
        let version = Command::new(&nvcc)
            .arg("--version")
            .output()
            .ok()
            .and_then(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .find(|l| l.contains("release"))
                    .map(str::to_string)
            })
            .unwrap_or_else(|| "unknown".into());
        Ok(Toolchain { nvcc, version })
    }

    /// The exact-target flags: `-gencode=arch=compute_90a,code=sm_90a` never embeds PTX for a
    /// different architecture. With [`Image::FatbinWithPtx`] the target's own PTX goes in too
    /// (`code=[sm_80,compute_80]`), which the driver can JIT-compile for a later GPU.
    pub fn gencode(target: &Target, image: Image) -> String {
        match image {
            Image::Cubin => format!("-gencode=arch={},code={}", target.compute, target.sm),
            Image::FatbinWithPtx => format!(
                "-gencode=arch={},code=[{},{}]",
                target.compute, target.sm, target.compute
            ),
        }
    }

    /// Cache key: the generated source, the target, the image kind and the toolchain version.
    pub fn cache_key(&self, cuda: &str, target: &Target, image: Image) -> String {
        let mut h = Sha256::new();
        h.update(cuda.as_bytes());
        h.update(target.name.as_bytes());
        if image == Image::FatbinWithPtx {
            h.update(b"+ptx");
        }
        h.update(self.version.as_bytes());
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Compile `cuda` to a cubin in `out_dir/<stem>.cubin`, returning the ptxas report text.
    pub fn compile(
        &self,
        cuda: &str,
        target: &Target,
        out_dir: &Path,
        stem: &str,
    ) -> Result<Build, ToolchainError> {
        self.compile_image(cuda, target, Image::Cubin, out_dir, stem)
    }

    /// Compile `cuda` to `out_dir/<stem>.<image extension>`: a cubin, or a fatbin holding the
    /// target's machine code and its PTX.
    pub fn compile_image(
        &self,
        cuda: &str,
        target: &Target,
        image: Image,
        out_dir: &Path,
        stem: &str,
    ) -> Result<Build, ToolchainError> {
        std::fs::create_dir_all(out_dir)
            .map_err(|e| ToolchainError::Io(format!("cannot create {}: {e}", out_dir.display())))?;
        let cu = out_dir.join(format!("{stem}.cu"));
        let cubin = out_dir.join(format!("{stem}.{}", image.extension()));
        std::fs::write(&cu, cuda)
            .map_err(|e| ToolchainError::Io(format!("cannot write {}: {e}", cu.display())))?;
        let out = Command::new(&self.nvcc)
            .arg(Self::gencode(target, image))
            .arg(image.nvcc_flag())
            .args([
                "-O3",
                "-std=c++17",
                "-diag-suppress",
                "177",
                "-Xptxas",
                "-v",
                "-o",
            ])
            .arg(&cubin)
            .arg(&cu)
            .output()
            .map_err(|e| ToolchainError::Io(format!("cannot run {}: {e}", self.nvcc.display())))?;
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if !out.status.success() {
            return Err(ToolchainError::Compile { log });
        }
        let resources = parse_ptxas(&log);
        Ok(Build {
            cubin,
            log,
            resources,
            cached: false,
        })
    }
}

/// What the compiler writes for a kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Image {
    /// Machine code for the exact target only (`<stem>.cubin`): the default.
    #[default]
    Cubin,
    /// A fatbin (`<stem>.fatbin`) with the target's machine code and its PTX, which the driver
    /// JIT-compiles on a later GPU. Asked for explicitly (`--embed-ptx`), and only for targets
    /// whose PTX is forward compatible (`Target::ptx_forward_compatible`).
    FatbinWithPtx,
}

impl Image {
    pub fn extension(self) -> &'static str {
        match self {
            Image::Cubin => "cubin",
            Image::FatbinWithPtx => "fatbin",
        }
    }
    fn nvcc_flag(self) -> &'static str {
        match self {
            Image::Cubin => "-cubin",
            Image::FatbinWithPtx => "-fatbin",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Build {
    pub cubin: PathBuf,
    pub log: String,
    pub resources: Vec<KernelResources>,
    /// Whether the cubin came from the build cache.
    pub cached: bool,
}

/// The build cache directory: `$CAKE_CACHE_DIR`, else `$XDG_CACHE_HOME/cake`, else
/// `~/.cache/cake`; `None` when none can be determined.
pub fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("CAKE_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("cake"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/cake"))
}

impl Toolchain {
    /// `compile`, through a content-addressed cache keyed on the generated source (itself a
    /// deterministic function of the canonical IR and target), the target and the toolchain
    /// version. A cache that cannot be read or written is skipped, never fatal.
    pub fn compile_cached(
        &self,
        cuda: &str,
        target: &Target,
        out_dir: &Path,
        stem: &str,
    ) -> Result<Build, ToolchainError> {
        self.compile_cached_image(cuda, target, Image::Cubin, out_dir, stem)
    }

    /// `compile_image` through the build cache.
    pub fn compile_cached_image(
        &self,
        cuda: &str,
        target: &Target,
        image: Image,
        out_dir: &Path,
        stem: &str,
    ) -> Result<Build, ToolchainError> {
        let Some(root) = cache_dir() else {
            return self.compile_image(cuda, target, image, out_dir, stem);
        };
        let entry = root
            .join("builds")
            .join(self.cache_key(cuda, target, image));
        let (cubin, log) = (entry.join("kernel.cubin"), entry.join("ptxas.log"));
        if let (Ok(bytes), Ok(text)) = (std::fs::read(&cubin), std::fs::read_to_string(&log)) {
            let io = |e: std::io::Error| {
                ToolchainError::Io(format!("cannot write into {}: {e}", out_dir.display()))
            };
            std::fs::create_dir_all(out_dir).map_err(io)?;
            std::fs::write(out_dir.join(format!("{stem}.cu")), cuda).map_err(io)?;
            let dst = out_dir.join(format!("{stem}.{}", image.extension()));
            std::fs::write(&dst, bytes).map_err(io)?;
            return Ok(Build {
                cubin: dst,
                resources: parse_ptxas(&text),
                log: text,
                cached: true,
            });
        }
        let build = self.compile_image(cuda, target, image, out_dir, stem)?;
        // Write the entry under a temporary name and rename it into place, so a crash never
        // leaves a half-written entry that later reads as a hit.
        let tmp = root.join("builds").join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            self.cache_key(cuda, target, image)
        ));
        let stored = std::fs::create_dir_all(&tmp).is_ok()
            && std::fs::copy(&build.cubin, tmp.join("kernel.cubin")).is_ok()
            && std::fs::write(tmp.join("ptxas.log"), &build.log).is_ok()
            && std::fs::rename(&tmp, &entry).is_ok();
        if !stored {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        Ok(build)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A fresh, empty temporary directory (removed on drop).
    struct Tmp(PathBuf);
    impl Tmp {
        fn new() -> Tmp {
            static N: AtomicUsize = AtomicUsize::new(0);
            let d = std::env::temp_dir().join(format!(
                "cake-toolchain-test-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::SeqCst)
            ));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Tmp(d.canonicalize().unwrap())
        }
        /// Creates an (empty) file at `rel`, with its directories; returns its path.
        fn touch(&self, rel: &str) -> PathBuf {
            let p = self.0.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "").unwrap();
            p
        }
        fn dir(&self, rel: &str) -> PathBuf {
            let p = self.0.join(rel);
            std::fs::create_dir_all(&p).unwrap();
            p
        }
        /// A Cake checkout at `rel` (the two marker files), optionally with its toolchain.
        fn checkout(&self, rel: &str, with_nvcc: bool) -> PathBuf {
            self.touch(&format!("{rel}/scripts/toolchain.sh"));
            self.touch(&format!("{rel}/.ci/cuda-requirements.txt"));
            if with_nvcc {
                self.touch(&format!("{rel}/{CHECKOUT_TOOLCHAIN}/bin/nvcc"));
            }
            self.0.join(rel)
        }
    }
    impl Drop for Tmp {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn not_found(s: &Search) -> (Vec<String>, String) {
        match s.locate() {
            Err(ToolchainError::NotFound { tried, fix }) => (tried, fix),
            other => panic!("expected NotFound, got {other:?}"),
        }
    }

    #[test]
    fn order_is_cuda_home_path_checkout_pip() {
        let t = Tmp::new();
        let home = t.0.join("cuda");
        let home_nvcc = t.touch("cuda/bin/nvcc");
        let path_nvcc = t.touch("bin2/nvcc");
        let repo = t.checkout("repo", true);
        let pip_nvcc = t.touch("site/nvidia/cu13/bin/nvcc");
        let mut s = Search {
            cuda_home: Some(home),
            path: vec![t.dir("bin1"), t.0.join("bin2")],
            checkout_starts: vec![repo.join("examples")],
            site_dirs: vec![t.0.join("site")],
        };
        std::fs::create_dir_all(repo.join("examples")).unwrap();
        assert_eq!(s.locate().unwrap(), home_nvcc);
        s.cuda_home = None;
        assert_eq!(s.locate().unwrap(), path_nvcc);
        s.path.pop();
        assert_eq!(
            s.locate().unwrap(),
            repo.join(CHECKOUT_TOOLCHAIN).join("bin/nvcc")
        );
        s.checkout_starts.clear();
        assert_eq!(s.locate().unwrap(), pip_nvcc);
        s.site_dirs.clear();
        assert!(s.locate().is_err());
    }

    #[test]
    fn every_path_entry_is_searched_not_only_the_first() {
        let t = Tmp::new();
        let nvcc = t.touch("c/nvcc");
        let s = Search {
            path: vec![t.dir("a"), t.dir("b"), t.0.join("c")],
            ..Search::default()
        };
        assert_eq!(s.locate().unwrap(), nvcc);
    }

    #[test]
    fn a_repeated_path_entry_is_listed_once() {
        let t = Tmp::new();
        let (a, b) = (t.dir("a"), t.dir("b"));
        let s = Search {
            path: vec![a.clone(), b.clone(), a.clone()],
            ..Search::default()
        };
        let (tried, _) = not_found(&s);
        let paths: Vec<&String> = tried.iter().filter(|l| l.starts_with("PATH: ")).collect();
        assert_eq!(
            paths,
            [
                &format!("PATH: {}", a.join("nvcc").display()),
                &format!("PATH: {}", b.join("nvcc").display())
            ]
        );
    }

    #[test]
    fn cuda_home_without_nvcc_falls_through_and_is_listed() {
        let t = Tmp::new();
        let nvcc = t.touch("bin/nvcc");
        let s = Search {
            cuda_home: Some(t.dir("empty-cuda")),
            path: vec![t.0.join("bin")],
            ..Search::default()
        };
        assert_eq!(s.locate().unwrap(), nvcc);
        let s = Search { path: vec![], ..s };
        let (tried, _) = not_found(&s);
        assert_eq!(
            tried[0],
            format!("CUDA_HOME: {}", t.0.join("empty-cuda/bin/nvcc").display())
        );
    }

    #[test]
    fn checkout_is_found_above_the_executable_and_above_the_current_directory() {
        let t = Tmp::new();
        let repo = t.checkout("repo", true);
        let want = repo.join(CHECKOUT_TOOLCHAIN).join("bin/nvcc");
        // A `cake` in target/release/, run from anywhere.
        let exe_dir = t.dir("repo/target/release");
        let elsewhere = t.dir("elsewhere");
        let s = Search {
            checkout_starts: vec![exe_dir, elsewhere.clone()],
            ..Search::default()
        };
        assert_eq!(s.locate().unwrap(), want);
        // An installed `cake` (outside any checkout) run in a subdirectory of the checkout.
        let s = Search {
            checkout_starts: vec![t.dir("home/.cargo/bin"), t.dir("repo/examples/deep")],
            ..Search::default()
        };
        assert_eq!(s.locate().unwrap(), want);
        // Neither: not found, and the message says where it looked.
        let s = Search {
            checkout_starts: vec![elsewhere.clone()],
            ..Search::default()
        };
        let (tried, _) = not_found(&s);
        assert!(
            tried
                .iter()
                .any(|l| l == &format!("Cake checkout: none at or above {}", elsewhere.display())),
            "{tried:?}"
        );
    }

    #[test]
    fn a_directory_without_both_markers_is_not_a_checkout() {
        let t = Tmp::new();
        t.touch("half/scripts/toolchain.sh");
        t.touch(&format!("half/{CHECKOUT_TOOLCHAIN}/bin/nvcc"));
        assert!(find_checkouts(&[t.dir("half/sub")]).is_empty());
        let repo = t.checkout("full", false);
        // Two starts inside one checkout name it once.
        assert_eq!(
            find_checkouts(&[t.dir("full/a"), t.dir("full/b/c"), repo.clone()]),
            vec![repo]
        );
    }

    #[test]
    fn message_lists_every_place_and_fixes_with_the_checkout_script() {
        let t = Tmp::new();
        let repo = t.checkout("repo", false);
        let (a, b, c) = (t.dir("a"), t.dir("b"), t.dir("c"));
        let site = t.dir("site");
        let s = Search {
            cuda_home: None,
            path: vec![a.clone(), b.clone(), c.clone()],
            checkout_starts: vec![repo.join("scripts")],
            site_dirs: vec![site.clone()],
        };
        let err = s.locate().unwrap_err();
        let ToolchainError::NotFound { tried, .. } = &err else {
            panic!("{err:?}")
        };
        let want = vec![
            "CUDA_HOME: not set".to_string(),
            format!("PATH: {}", a.join("nvcc").display()),
            format!("PATH: {}", b.join("nvcc").display()),
            format!("PATH: {}", c.join("nvcc").display()),
            format!(
                "Cake checkout: {}",
                repo.join(CHECKOUT_TOOLCHAIN).join("bin/nvcc").display()
            ),
            format!(
                "pip package: {}",
                site.join("nvidia/cu13/bin/nvcc").display()
            ),
            format!(
                "pip package: {}",
                site.join("nvidia/cuda_nvcc/bin/nvcc").display()
            ),
        ];
        assert_eq!(tried, &want);
        let text = err.to_string();
        assert!(
            text.starts_with("no nvcc found. Looked in, in order:\n"),
            "{text}"
        );
        for line in &want {
            assert!(
                text.contains(&format!("\n  {line}\n")),
                "{line} missing:\n{text}"
            );
        }
        assert!(
            text.contains(&format!(
                "\nFix: {}\n",
                repo.join("scripts/toolchain.sh").display()
            )),
            "{text}"
        );
    }

    #[test]
    fn without_a_checkout_the_fix_is_the_complete_pinned_pip_line() {
        let s = Search {
            path: vec![PathBuf::from("/nonexistent-cake-test")],
            ..Search::default()
        };
        let (_, fix) = not_found(&s);
        // Read the pins independently of the compiled-in copy.
        let file = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/cuda-requirements.txt"),
        )
        .unwrap();
        let pins: Vec<&str> = file
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .collect();
        assert!(pins.iter().any(|p| p.starts_with("nvidia-cuda-runtime==")));
        let line = fix.lines().next().unwrap();
        assert_eq!(line, format!("python3 -m pip install {}", pins.join(" ")));
    }

    #[test]
    fn discover_in_reports_the_found_nvcc() {
        let t = Tmp::new();
        let nvcc = t.touch("bin/nvcc");
        let tc = Toolchain::discover_in(&Search {
            path: vec![t.0.join("bin")],
            ..Search::default()
        })
        .unwrap();
        assert_eq!(tc.nvcc, nvcc);
        // An empty file does not run, so no release line.
        assert_eq!(tc.version, "unknown");
    }
}
