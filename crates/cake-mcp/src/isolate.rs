//! One tool call's compiler work in a child process (`cake mcp-worker`): a JSON request on its
//! stdin, the JSON reply on its stdout. The server kills the child's process group on timeout or
//! on the client's cancellation, and caps its address space, so a hostile schedule costs at most
//! one bounded process, never the server.

use std::future::Future;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::limits::{Policy, MAX_LINE_BYTES};

/// What the server sends the child.
#[derive(Serialize, Deserialize)]
pub(crate) struct Request {
    pub tool: String,
    pub input: Value,
    pub policy: Policy,
}

/// What the child answers, as its last stdout line.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Reply {
    Ok(Value),
    Err(String),
}

/// The largest reply read back (lowered CUDA of a 4 MiB schedule fits many times over).
const MAX_REPLY_BYTES: u64 = 256 << 20;
/// How much of the end of the child's stderr is kept for a crash message.
const MAX_STDERR_BYTES: u64 = 64 << 10;

/// Why a call ended without a reply.
pub(crate) enum Stopped {
    Timeout,
    Cancelled,
}

/// Run `request` in `exe mcp-worker` under the limits; `Err(Ok(why))` when it was stopped.
pub(crate) async fn run(
    exe: &Path,
    memory: u64,
    timeout: Duration,
    cancelled: impl Future<Output = ()>,
    request: &Request,
) -> Result<Result<Value, String>, Stopped> {
    let mut cmd = tokio::process::Command::new(exe);
    cmd.arg("mcp-worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // Its own process group: a kill reaches nvcc and ptxas under `build` too.
        .process_group(0);
    // SAFETY: only async-signal-safe calls (setrlimit, prctl) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let limit = |resource, bytes: u64| {
                let r = libc::rlimit {
                    rlim_cur: bytes as libc::rlim_t,
                    rlim_max: bytes as libc::rlim_t,
                };
                if libc::setrlimit(resource, &r) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            };
            limit(libc::RLIMIT_AS, memory)?;
            // An out-of-memory abort would otherwise dump a core the size of the limit.
            limit(libc::RLIMIT_CORE, 0)?;
            // Dies with the server, even a killed one.
            #[cfg(target_os = "linux")]
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Ok(Err(format!(
                "cannot start the tool process {}: {e}",
                exe.display()
            )))
        }
    };
    let pid = child.id().map(|p| p as i32);
    let body = serde_json::to_vec(request).unwrap_or_default();
    let mut stdin = child.stdin.take().expect("piped stdin");
    let feed = tokio::spawn(async move {
        let _ = stdin.write_all(&body).await;
        // Dropping stdin ends the request.
    });
    let out = tokio::spawn(read_capped(child.stdout.take(), MAX_REPLY_BYTES));
    let err = tokio::spawn(read_tail(child.stderr.take(), MAX_STDERR_BYTES));

    let stopped = tokio::select! {
        status = child.wait() => Ok(status),
        _ = tokio::time::sleep(timeout) => Err(Stopped::Timeout),
        _ = cancelled => Err(Stopped::Cancelled),
    };
    let status = match stopped {
        Ok(status) => status,
        Err(why) => {
            // Not yet reaped, so the group id is still ours to kill.
            if let Some(pid) = pid {
                // SAFETY: kill(2) on the child's own process group; no memory is touched.
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                }
            }
            let _ = child.wait().await;
            feed.abort();
            return Err(why);
        }
    };
    feed.abort();
    // A leftover grandchild could hold the pipes open: wait a little, not forever.
    let grace = Duration::from_secs(5);
    let collect = |mut task: tokio::task::JoinHandle<Vec<u8>>| async move {
        let got = tokio::time::timeout(grace, &mut task).await;
        task.abort();
        got.ok().and_then(Result::ok).unwrap_or_default()
    };
    let stdout = collect(out).await;
    let stderr = collect(err).await;
    let status = match status {
        Ok(s) => s,
        Err(e) => return Ok(Err(format!("lost the tool process: {e}"))),
    };
    let reply = stdout
        .split(|b| *b == b'\n')
        .rev()
        .find(|l| !l.is_empty())
        .and_then(|l| serde_json::from_slice::<Reply>(l).ok());
    Ok(match (reply, status.success()) {
        (Some(Reply::Ok(v)), true) => Ok(v),
        (Some(Reply::Err(e)), true) => Err(e),
        _ => Err(crashed(status, &stderr, memory, stdout.len() as u64)),
    })
}

async fn read_capped(r: Option<impl AsyncRead + Unpin>, cap: u64) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Some(r) = r {
        let _ = r.take(cap).read_to_end(&mut buf).await;
    }
    buf
}

/// All of `r`, keeping the last `cap` bytes: a chatty child never blocks on a full pipe.
async fn read_tail(r: Option<impl AsyncRead + Unpin>, cap: u64) -> Vec<u8> {
    let mut kept = Vec::new();
    let mut chunk = vec![0u8; 8192];
    if let Some(mut r) = r {
        while let Ok(n @ 1..) = r.read(&mut chunk).await {
            kept.extend_from_slice(&chunk[..n]);
            let over = kept.len().saturating_sub(cap as usize);
            kept.drain(..over);
        }
    }
    kept
}

/// The message for a child that ended without a reply.
fn crashed(status: std::process::ExitStatus, stderr: &[u8], memory: u64, out_len: u64) -> String {
    use std::os::unix::process::ExitStatusExt;
    let stderr = String::from_utf8_lossy(stderr);
    if stderr.contains("memory allocation of") || stderr.contains("out of memory") {
        return format!(
            "memory limit: the tool needed more than {} MiB and was stopped (cake mcp --memory)",
            memory >> 20
        );
    }
    if out_len >= MAX_REPLY_BYTES {
        return format!(
            "output limit: the result is over {} MiB",
            MAX_REPLY_BYTES >> 20
        );
    }
    let how = match status.signal() {
        Some(s) => format!("signal {s}"),
        None => format!("{status}"),
    };
    let tail: String = stderr.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
    format!("internal error in Cake (please report it with the input): the tool process ended with {how}: {tail}")
}

/// `cake mcp-worker`: read one [`Request`] on stdin, run the tool, print one [`Reply`].
pub fn worker_main() -> ExitCode {
    let mut buf = Vec::new();
    if let Err(e) = std::io::stdin()
        .take(2 * MAX_LINE_BYTES as u64)
        .read_to_end(&mut buf)
    {
        eprintln!("error: reading the request: {e}");
        return ExitCode::from(2);
    }
    let request: Request = match serde_json::from_slice(&buf) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: `cake mcp-worker` is run by `cake mcp`, not by hand ({e})");
            return ExitCode::from(2);
        }
    };
    drop(buf);
    test_hook();
    let Request {
        tool,
        input,
        policy,
    } = request;
    let reply = match std::panic::catch_unwind(|| crate::dispatch(&tool, input, &policy)) {
        Ok(Ok(v)) => Reply::Ok(v),
        Ok(Err(e)) => Reply::Err(e),
        Err(p) => Reply::Err(crate::panic_message(p)),
    };
    let mut line = serde_json::to_vec(&reply).unwrap_or_default();
    line.push(b'\n');
    let mut out = std::io::stdout().lock();
    if out.write_all(&line).and_then(|_| out.flush()).is_err() {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

/// Test-only misbehaviour, read by `cake mcp-worker` alone: `CAKE_MCP_WORKER_TEST=spin` burns a
/// core forever, `=alloc` allocates (and touches) up to 3 GiB, which a smaller memory limit
/// stops; without one it gives up there and the tool runs normally.
fn test_hook() {
    match std::env::var("CAKE_MCP_WORKER_TEST").as_deref() {
        Ok("spin") => loop {
            std::hint::spin_loop();
        },
        Ok("alloc") => {
            let mut held: Vec<Vec<u8>> = Vec::new();
            for _ in 0..48 {
                held.push(vec![1u8; 64 << 20]);
                std::hint::black_box(&held);
            }
        }
        _ => {}
    }
}
