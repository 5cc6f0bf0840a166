//! The NVIDIA toolchain: discovery (CUDA_HOME, PATH, or the pip-installed `nvidia-cuda-nvcc`
//! package), compilation for exactly one target, `ptxas -v` resource reports, and a
//! content-addressed build cache.

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
    NotFound { tried: Vec<String> },
    Io(String),
    Compile { log: String },
}

impl std::fmt::Display for ToolchainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolchainError::NotFound { tried } => write!(
                f,
                "no nvcc found. Looked in:\n  {}\nSet CUDA_HOME to a CUDA 13 toolkit, put nvcc on PATH, or `pip install nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88`",
                tried.join("\n  ")
            ),
            ToolchainError::Io(e) => write!(f, "{e}"),
            ToolchainError::Compile { log } => write!(f, "nvcc failed:\n{log}"),
        }
    }
}

impl std::error::Error for ToolchainError {}

fn usable(p: &Path) -> bool {
    p.is_file()
}

/// Where pip puts `nvidia-cuda-nvcc` (CUDA 13 layout: `site-packages/nvidia/cu13/bin/nvcc`).
fn pip_candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for python in ["python3", "python"] {
        let Ok(o) = Command::new(python)
            .args(["-c", "import sys, site; print('\\n'.join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))"])
            .output()
        else {
            continue;
        };
        for dir in String::from_utf8_lossy(&o.stdout).lines() {
            for sub in ["nvidia/cu13/bin/nvcc", "nvidia/cuda_nvcc/bin/nvcc"] {
                out.push(Path::new(dir).join(sub));
            }
        }
        break;
    }
    out
}

impl Toolchain {
    /// Find nvcc: `CUDA_HOME/bin/nvcc`, then `nvcc` on PATH, then the pip package.
    pub fn discover() -> Result<Toolchain, ToolchainError> {
        let mut tried = Vec::new();
        let mut candidates = Vec::new();
        match std::env::var_os("CUDA_HOME") {
            Some(home) => candidates.push(("CUDA_HOME", PathBuf::from(home).join("bin/nvcc"))),
            None => tried.push("CUDA_HOME (not set)".to_string()),
        }
        if let Some(path) = std::env::var_os("PATH") {
            for dir in std::env::split_paths(&path) {
                candidates.push(("PATH", dir.join("nvcc")));
            }
        }
        for p in pip_candidates() {
            candidates.push(("pip nvidia-cuda-nvcc", p));
        }
        for (how, p) in candidates {
            if usable(&p) {
                let version = Command::new(&p)
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
                return Ok(Toolchain { nvcc: p, version });
            }
            if !tried.iter().any(|t| t.starts_with(how)) {
                tried.push(format!("{how}: {}", p.display()));
            }
        }
        Err(ToolchainError::NotFound { tried })
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
