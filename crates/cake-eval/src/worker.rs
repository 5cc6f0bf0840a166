//! The supervisor of the evaluation worker (`python3 -m cake.worker`, docs/worker.md): one
//! JSON request per line out, one answer per line back, a deadline on every request. A hang, a
//! crash or a sticky CUDA error ends that worker (its whole process group is killed); the next
//! request starts a fresh one and replays the `load`s, so one bad kernel never ends the run.

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Stops a supervisor from another thread (an MCP client's cancellation, for example): the
/// running worker's process group is killed at once, and every later request of that supervisor
/// fails with [`Failure::Cancelled`] without starting a new worker.
#[derive(Clone, Debug, Default)]
pub struct Cancel {
    cancelled: Arc<AtomicBool>,
    /// The running worker's process id (= its process group), while one runs.
    worker: Arc<Mutex<Option<i32>>>,
}

impl Cancel {
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        #[cfg(unix)]
        if let Some(pid) = self.worker.lock().ok().and_then(|w| *w) {
            // SAFETY: kill(2) on the worker's own process group; no memory is touched.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    fn set_worker(&self, pid: Option<i32>) {
        if let Ok(mut w) = self.worker.lock() {
            *w = pid;
        }
    }
}

/// How to start a worker.
#[derive(Clone, Debug)]
pub struct WorkerCommand {
    pub program: String,
    pub args: Vec<String>,
}

impl WorkerCommand {
    /// `$CAKE_WORKER` (a command line split on whitespace) when set, else
    /// `$CAKE_PYTHON -m cake.worker` (default `python3`).
    pub fn from_env() -> WorkerCommand {
        if let Ok(cmd) = std::env::var("CAKE_WORKER") {
            let mut parts = cmd.split_whitespace().map(str::to_string);
            if let Some(program) = parts.next() {
                return WorkerCommand {
                    program,
                    args: parts.collect(),
                };
            }
        }
        WorkerCommand {
            program: std::env::var("CAKE_PYTHON").unwrap_or_else(|_| "python3".into()),
            args: vec!["-m".into(), "cake.worker".into()],
        }
    }
}

/// Why a request produced no answer, or an error answer.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "failure", rename_all = "snake_case")]
pub enum Failure {
    /// The worker could not be started or did not say hello.
    Spawn { message: String },
    /// No answer within the deadline; the worker was killed.
    Hang { timeout_s: f64 },
    /// The worker's output ended (it exited or died).
    Crash { status: String, stderr_tail: String },
    /// The worker answered with an error; `sticky` ones ended it.
    Error {
        kind: String,
        message: String,
        sticky: bool,
    },
    /// The caller cancelled the evaluation ([`Cancel`]); the worker was killed.
    Cancelled,
    /// Not asked of the worker: the same build ended it earlier in the run (`reason` says
    /// where), so each further shape would only cost another restart, or another deadline.
    Skipped { reason: String },
}

impl Failure {
    /// Whether the contract or the harness, not the candidate, is at fault: the worker reports
    /// a malformed request as `protocol` and a failing generator or oracle as `oracle`.
    pub fn is_harness_fault(&self) -> bool {
        matches!(self, Failure::Error { kind, .. } if kind == "protocol" || kind == "oracle")
    }

    /// Whether the failure ended the worker (so the candidate cannot be trusted to run again).
    pub fn ended_worker(&self) -> bool {
        match self {
            Failure::Error { sticky, .. } => *sticky,
            Failure::Skipped { .. } => false,
            _ => true,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Spawn { message } => write!(f, "the worker did not start: {message}"),
            Failure::Cancelled => write!(f, "cancelled by the caller; the worker was killed"),
            Failure::Skipped { reason } => write!(f, "not run: {reason}"),
            Failure::Hang { timeout_s } => {
                write!(
                    f,
                    "no answer within {timeout_s} s (hang); the worker was killed"
                )
            }
            Failure::Crash {
                status,
                stderr_tail,
            } => {
                write!(f, "the worker died ({status})")?;
                if !stderr_tail.is_empty() {
                    write!(f, "; its last words:\n{stderr_tail}")?;
                }
                Ok(())
            }
            Failure::Error {
                kind,
                message,
                sticky,
            } => write!(
                f,
                "{kind} error: {message}{}",
                if *sticky {
                    " (sticky: the worker was restarted)"
                } else {
                    ""
                }
            ),
        }
    }
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// The thread collecting stderr; joined after a crash so the tail holds the last words.
    stderr_reader: std::thread::JoinHandle<()>,
}

const STDERR_LINES: usize = 40;

/// A worker and what it takes to bring a fresh one to the same state.
pub struct Supervisor {
    command: WorkerCommand,
    running: Option<Running>,
    /// `load` requests to replay into a fresh worker.
    loads: Vec<Value>,
    next_id: u64,
    /// The first worker's `hello` answer (`env`).
    pub env: Option<Value>,
    /// Workers started after the first.
    pub restarts: u32,
    /// Deadline of `hello` (CUDA start-up and the bandwidth probe) and of `load`.
    pub startup_timeout: Duration,
    /// Echo the worker's stderr to ours.
    pub verbose: bool,
    cancel: Cancel,
}

impl Supervisor {
    pub fn new(command: WorkerCommand) -> Supervisor {
        Supervisor {
            command,
            running: None,
            loads: Vec::new(),
            next_id: 1,
            env: None,
            restarts: 0,
            startup_timeout: Duration::from_secs(180),
            verbose: false,
            cancel: Cancel::default(),
        }
    }

    /// A handle that cancels this supervisor's evaluation from another thread.
    pub fn cancel_handle(&self) -> Cancel {
        self.cancel.clone()
    }

    fn spawn(&mut self) -> Result<(), Failure> {
        let mut cmd = Command::new(&self.command.program);
        cmd.args(&self.command.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // Its own process group, so a kill reaches anything it started too.
            cmd.process_group(0);
        }
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt;
            let parent = std::process::id() as libc::pid_t;
            // SAFETY: between fork and exec only async-signal-safe calls are made (prctl,
            // getppid). The worker, in a process group of its own, misses the terminal's
            // Ctrl-C; if this process dies the kernel kills the worker (and a hung kernel with
            // it) instead of leaving it spinning.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    if libc::getppid() != parent {
                        libc::_exit(1); // the parent died before prctl took effect
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd.spawn().map_err(|e| Failure::Spawn {
            message: format!("cannot run `{}`: {e}", self.command.program),
        })?;
        self.cancel.set_worker(Some(child.id() as i32));
        if self.cancel.is_cancelled() {
            // Cancelled while the worker was starting: the handle may have missed it.
            self.cancel.cancel();
        }
        let (stdin, stdout, stderr) =
            match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
                (Some(i), Some(o), Some(e)) => (i, o, e),
                _ => {
                    let _ = child.kill();
                    return Err(Failure::Spawn {
                        message: "the worker's pipes could not be opened".into(),
                    });
                }
            };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let (tail2, verbose) = (tail.clone(), self.verbose);
        let stderr_reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if verbose {
                    eprintln!("worker: {line}");
                }
                if let Ok(mut t) = tail2.lock() {
                    if t.len() == STDERR_LINES {
                        t.pop_front();
                    }
                    t.push_back(line);
                }
            }
        });
        self.running = Some(Running {
            child,
            stdin,
            lines: rx,
            stderr_tail: tail,
            stderr_reader,
        });
        // A worker is either fully started (hello answered, every load replayed) or gone.
        let started = self.greet_and_replay();
        if started.is_err() {
            self.kill();
        }
        started
    }

    fn greet_and_replay(&mut self) -> Result<(), Failure> {
        let hello = self.exchange(json!({"op": "hello"}), self.startup_timeout)?;
        if self.env.is_none() {
            self.env = hello.get("env").cloned();
        }
        for load in self.loads.clone() {
            self.exchange(load, self.startup_timeout)?;
        }
        Ok(())
    }

    /// Kill the worker's process group and reap it.
    fn kill(&mut self) {
        if let Some(r) = self.running.take() {
            Self::end(r);
        }
        self.cancel.set_worker(None);
    }

    /// Kill a worker's process group, reap it and wait for its stderr to drain; returns the exit
    /// status and the last lines of stderr.
    fn end(mut r: Running) -> (String, String) {
        #[cfg(unix)]
        {
            let pid = r.child.id() as i32;
            // SAFETY: kill(2) with a negative pid signals the process group we created; it
            // touches no memory of ours.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = r.child.kill();
        let status = r
            .child
            .wait()
            .map_or("unknown status".to_string(), |s| s.to_string());
        // Every writer of the pipe is dead now, so the reader reaches end of file.
        let _ = r.stderr_reader.join();
        let tail = r
            .stderr_tail
            .lock()
            .map(|t| t.iter().cloned().collect::<Vec<_>>().join("\n"))
            .unwrap_or_default();
        (status, tail)
    }

    /// Send one request to the running worker and wait for its answer.
    fn exchange(&mut self, mut request: Value, timeout: Duration) -> Result<Value, Failure> {
        let id = self.next_id;
        self.next_id += 1;
        request["id"] = json!(id);
        let Some(r) = self.running.as_mut() else {
            return Err(Failure::Spawn {
                message: "no worker".into(),
            });
        };
        let sent = writeln!(r.stdin, "{request}").and_then(|_| r.stdin.flush());
        // One deadline for the whole request: stray lines do not extend it.
        let deadline = std::time::Instant::now() + timeout;
        let answer = match sent {
            Err(_) => Err(RecvTimeoutError::Disconnected),
            Ok(()) => loop {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if self.cancel.is_cancelled() {
                    break Err(RecvTimeoutError::Disconnected);
                }
                // Wake up now and then to notice a cancellation.
                match r.lines.recv_timeout(left.min(Duration::from_millis(200))) {
                    Err(RecvTimeoutError::Timeout) if !left.is_zero() => continue,
                    Ok(line) => match serde_json::from_str::<Value>(&line) {
                        Ok(v) if v.get("id") == Some(&json!(id)) => break Ok(v),
                        // A stray line (or an answer to an abandoned request): keep waiting.
                        _ => continue,
                    },
                    Err(e) => break Err(e),
                }
            },
        };
        if self.cancel.is_cancelled() {
            self.kill();
            return Err(Failure::Cancelled);
        }
        match answer {
            Ok(v) if v.get("ok") == Some(&json!(true)) => Ok(v),
            Ok(v) => {
                let e = v.get("error").cloned().unwrap_or(Value::Null);
                let failure = Failure::Error {
                    kind: e["kind"].as_str().unwrap_or("python").to_string(),
                    message: e["message"].as_str().unwrap_or("(no message)").to_string(),
                    sticky: e["sticky"].as_bool().unwrap_or(false),
                };
                if failure.ended_worker() {
                    self.kill();
                }
                Err(failure)
            }
            Err(RecvTimeoutError::Timeout) => {
                self.kill();
                Err(Failure::Hang {
                    timeout_s: timeout.as_secs_f64(),
                })
            }
            Err(RecvTimeoutError::Disconnected) => {
                let (status, stderr_tail) = match self.running.take() {
                    Some(r) => Self::end(r),
                    None => ("unknown status".into(), String::new()),
                };
                Err(Failure::Crash {
                    status,
                    stderr_tail,
                })
            }
        }
    }

    /// Start the worker if none runs (saying hello and replaying loads).
    pub fn ensure_running(&mut self) -> Result<(), Failure> {
        if self.cancel.is_cancelled() {
            return Err(Failure::Cancelled);
        }
        if self.running.is_none() {
            if self.env.is_some() {
                self.restarts += 1;
            }
            self.spawn()?;
        }
        Ok(())
    }

    /// Load a callable into the worker now and into every later one.
    pub fn load(&mut self, request: Value) -> Result<(), Failure> {
        self.ensure_running()?;
        let answer = self.exchange(request.clone(), self.startup_timeout);
        if answer.is_ok() {
            self.loads.push(request);
        }
        answer.map(|_| ())
    }

    /// One request with its deadline; the worker is (re)started first if needed.
    pub fn request(&mut self, request: Value, timeout: Duration) -> Result<Value, Failure> {
        self.ensure_running()?;
        self.exchange(request, timeout)
    }

    /// Ask the worker to exit; kill it if it does not within a few seconds.
    pub fn shutdown(&mut self) {
        if self.running.is_some() {
            let _ = self.exchange(json!({"op": "shutdown"}), Duration::from_secs(5));
        }
        self.kill();
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.kill();
    }
}
