//! `cake mcp`'s limits against rmcp's own client: the real binary, its tool calls in child
//! processes (`cake mcp-worker`). `CAKE_MCP_WORKER_TEST` makes those children misbehave (spin
//! or allocate); only `cake mcp-worker` reads it. No toolchain or GPU needed.

use rmcp::model::{CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService};
use rmcp::ServiceExt;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A scratch directory inside the checkout (under the target directory), so inside the policy.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

struct Mcp {
    client: RunningService<RoleClient, ()>,
    pid: u32,
    _child: tokio::process::Child,
}

async fn start(args: &[&str], env: &[(&str, &str)]) -> Mcp {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_cake"))
        .current_dir(root())
        .arg("mcp")
        .args(args)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("run cake mcp");
    let pid = child.id().unwrap();
    let io = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let client = ().serve(io).await.expect("initialize");
    Mcp {
        client,
        pid,
        _child: child,
    }
}

impl Mcp {
    async fn call(&self, tool: &str, args: Value) -> CallToolResult {
        let args = args.as_object().unwrap().clone();
        let call = self
            .client
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args));
        // A limit that fails to act must fail the test, not hang it.
        tokio::time::timeout(Duration::from_secs(60), call)
            .await
            .unwrap_or_else(|_| panic!("tools/call {tool}: no answer within 60 s"))
            .unwrap_or_else(|e| panic!("tools/call {tool}: {e}"))
    }

    /// The server's child processes (its tool processes).
    fn children(&self) -> Vec<u32> {
        children_of(self.pid)
    }

    async fn wait_for_child(&self) -> u32 {
        let t = Instant::now();
        loop {
            if let Some(&pid) = self.children().first() {
                return pid;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "no tool process started"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn children_of(parent: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces, so split after its `)`.
        let after = &stat[stat.rfind(')').unwrap() + 1..];
        let ppid: u32 = after.split_whitespace().nth(1).unwrap().parse().unwrap();
        if ppid == parent {
            pids.push(pid);
        }
    }
    pids
}

/// Whether `pid` is gone (exited and reaped).
async fn gone_within(pid: u32, limit: Duration) -> bool {
    let t = Instant::now();
    while t.elapsed() < limit {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn tool_error(r: &CallToolResult) -> String {
    assert_eq!(r.is_error, Some(true), "expected a tool error: {}", text(r));
    text(r)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_call_is_killed_at_the_time_limit() {
    let mcp = start(&["--timeout", "2"], &[("CAKE_MCP_WORKER_TEST", "spin")]).await;
    let t = Instant::now();
    let call = mcp.call("check", json!({"path": "examples/gemm_sm90.py"}));
    let (r, pid) = tokio::join!(call, mcp.wait_for_child());
    let e = tool_error(&r);
    assert!(e.contains("time limit") && e.contains("--timeout"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    assert!(
        gone_within(pid, Duration::from_secs(5)).await,
        "tool process {pid} survived"
    );
    // The server goes on.
    let r = mcp.call("explain", json!({"code": "S005"})).await;
    assert!(
        tool_error(&r).contains("time limit"),
        "the hook spins every call"
    );
    mcp.client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_stops_its_process() {
    let mcp = start(&[], &[("CAKE_MCP_WORKER_TEST", "spin")]).await;
    let params = CallToolRequestParams::new("check".to_string()).with_arguments(
        json!({"path": "examples/gemm_sm90.py"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let handle = mcp
        .client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("sent");
    let pid = mcp.wait_for_child().await;
    // Burning a core until now.
    handle.cancel(Some("test".into())).await.expect("cancelled");
    assert!(
        gone_within(pid, Duration::from_secs(5)).await,
        "tool process {pid} still runs after the cancellation"
    );
    assert!(mcp.children().is_empty(), "{:?}", mcp.children());
    mcp.client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_past_the_memory_limit_is_stopped() {
    let mcp = start(&["--memory", "1G"], &[("CAKE_MCP_WORKER_TEST", "alloc")]).await;
    let t = Instant::now();
    let r = mcp
        .call("check", json!({"path": "examples/gemm_sm90.py"}))
        .await;
    let e = tool_error(&r);
    assert!(e.contains("memory limit") && e.contains("1024 MiB"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    mcp.client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_test_past_the_eval_time_limit_is_stopped() {
    // A worker that never answers its handshake.
    let data = "crates/cake-eval/tests/data";
    let mcp = start(&["--eval-timeout", "2"], &[("CAKE_WORKER", "sleep 600")]).await;
    let t = Instant::now();
    let r = mcp
        .call(
            "test",
            json!({"contract": format!("{data}/small.contract.toml"),
                   "kernel": format!("{data}/good.launch.json")}),
        )
        .await;
    let e = tool_error(&r);
    assert!(
        e.contains("time limit") && e.contains("--eval-timeout"),
        "{e}"
    );
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    mcp.client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread")]
async fn devices_fifos_and_outside_paths_are_refused_quickly() {
    let dir = scratch("mcp-inputs");
    let fifo = dir.join("schedule.py");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // /dev allowed, so /dev/zero meets the input rule rather than the path policy; the scratch
    // directory too, which lies outside the server's directory when CARGO_TARGET_DIR does.
    let scratch_dir = dir.display().to_string();
    let mcp = start(&["--allow", "/dev", "--allow", &scratch_dir], &[]).await;
    let t = Instant::now();
    let e = tool_error(&mcp.call("check", json!({"path": "/dev/zero"})).await);
    assert!(e.contains("not a regular file"), "{e}");
    let e = tool_error(
        &mcp.call("check", json!({"path": fifo.display().to_string()}))
            .await,
    );
    assert!(e.contains("not a regular file"), "{e}");
    let e = tool_error(&mcp.call("check", json!({"path": "/etc/passwd"})).await);
    assert!(
        e.starts_with("path policy:") && e.contains("--allow"),
        "{e}"
    );
    assert!(!e.contains("root:"), "leaks the file: {e}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    mcp.client.cancel().await.ok();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn build_creates_nothing_outside_the_roots() {
    let mcp = start(&[], &[]).await;
    let outside = std::env::temp_dir().join(format!("cake-mcp-escape-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&outside);
    let e = tool_error(
        &mcp.call(
            "build",
            json!({"path": "examples/gemm_sm90.py", "target": "sm_90a",
                   "out_dir": outside.join("a/b").display().to_string()}),
        )
        .await,
    );
    assert!(e.starts_with("path policy:"), "{e}");
    assert!(!outside.exists(), "{} was created", outside.display());
    // `..` out of the working directory, through a directory that does not exist yet.
    let e = tool_error(
        &mcp.call(
            "build",
            json!({"path": "examples/gemm_sm90.py", "target": "sm_90a",
                   "out_dir": "target/nonexistent-cake-dir/../../../cake-mcp-escape"}),
        )
        .await,
    );
    assert!(e.starts_with("path policy:"), "{e}");
    assert!(!root().join("target/nonexistent-cake-dir").exists());
    assert!(!root().join("../cake-mcp-escape").exists());
    mcp.client.cancel().await.ok();
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_arguments_are_rejected_and_annotations_listed() {
    let mcp = start(&[], &[]).await;
    let e = tool_error(
        &mcp.call(
            "check",
            json!({"path": "examples/gemm_sm90.py", "strict": true, "fast": 1}),
        )
        .await,
    );
    assert!(e.contains("unknown field `fast`"), "{e}");
    let tools = mcp.client.list_all_tools().await.unwrap();
    for t in &tools {
        let a = t
            .annotations
            .as_ref()
            .unwrap_or_else(|| panic!("{}", t.name));
        let read_only = ["check", "explain", "lower", "cost", "evolve_status"].contains(&&*t.name);
        assert_eq!(a.read_only_hint, Some(read_only), "{}", t.name);
        let schema = serde_json::to_value(&*t.input_schema).unwrap();
        assert_eq!(schema["additionalProperties"], false, "{}", t.name);
    }
    // Calls that do run still work through the tool processes.
    let r = mcp
        .call("check", json!({"path": "tests/check/CAKE-S005-bad.py"}))
        .await;
    assert_eq!(r.is_error, Some(false), "{}", text(&r));
    assert_eq!(r.structured_content.as_ref().unwrap()["errors"], 2);
    mcp.client.cancel().await.ok();
}

#[test]
fn help_lists_every_tool() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cake"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let line = help
        .lines()
        .find(|l| l.trim_start().starts_with("mcp "))
        .unwrap_or_else(|| panic!("no mcp line:\n{help}"));
    let names = cake_mcp::CakeServer::new().tool_names();
    assert!(names.len() >= 8, "{names:?}");
    for name in &names {
        assert!(
            line.contains(name.as_str()),
            "`cake --help` lacks `{name}`: {line}"
        );
    }
    let long = std::process::Command::new(env!("CARGO_BIN_EXE_cake"))
        .args(["mcp", "--help"])
        .output()
        .unwrap();
    let long = String::from_utf8(long.stdout).unwrap();
    for name in names
        .iter()
        .map(String::as_str)
        .chain(["--allow", "--timeout", "--memory"])
    {
        assert!(long.contains(name), "`cake mcp --help` lacks `{name}`");
    }
}
