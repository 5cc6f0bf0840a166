//! Evaluation: workload contracts ([`contract`]), the worker that runs kernels on the GPU
//! ([`worker`], protocol in docs/worker.md), the correctness and timing protocols driven from
//! here ([`mod@run`]) and the evidence record they produce ([`evidence`]).

pub mod contract;
pub mod evidence;
mod expr;
pub mod family;
pub mod run;
pub mod worker;

pub use contract::{Contract, ContractError};
pub use evidence::Evidence;
pub use run::{check_options, run, Mode, Options, RunError, WORKER_HELP};
pub use worker::{Cancel, Failure, Supervisor, WorkerCommand};
