//! The two ways a launch can fail: the arguments or the launch metadata were rejected before
//! anything reached the GPU (`Launch`), or a CUDA driver call failed (`Cuda`).

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// Rejected before launch; the message names the tensor, argument or field and says what
    /// was expected and what was found.
    Launch(String),
    /// A driver call returned an error.
    Cuda(CudaError),
}

/// A failed driver call: which call, and the `CUresult` by number and by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaError {
    /// The call with its salient arguments, e.g. `cuModuleLoadData(gemm.cubin)`.
    pub call: String,
    /// The `CUresult` value.
    pub code: u32,
    /// `cuGetErrorName`'s answer, e.g. `CUDA_ERROR_ILLEGAL_ADDRESS`.
    pub name: String,
    /// `cuGetErrorString`'s answer.
    pub description: String,
    /// Extra context appended to the message (device and target, say).
    pub note: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Launch(m) => f.write_str(m),
            Error::Cuda(e) => e.fmt(f),
        }
    }
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {} ({})", self.call, self.name, self.code)?;
        if !self.description.is_empty() {
            write!(f, ": {}", self.description)?;
        }
        if !self.note.is_empty() {
            write!(f, "; {}", self.note)?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// A validation error.
pub(crate) fn launch(msg: impl Into<String>) -> Error {
    Error::Launch(msg.into())
}
