//! `cake mcp` on the wire: the real binary, newline-delimited JSON-RPC on its stdin and stdout,
//! as an MCP client launches it (docs/agents.md). No toolchain or GPU needed.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cake"))
            .current_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run cake mcp");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Server {
            child,
            stdin,
            lines,
        }
    }

    fn send_raw(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string());
    }

    /// The response to request `id` (skipping notifications and other responses).
    fn response(&mut self, id: u64) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no response to request {id}"));
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries a non-JSON line ({e}): {line}"));
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(id)
    }

    fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        let r = self.request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        );
        assert!(r.get("error").is_none(), "{tool}: protocol error {r}");
        r["result"].clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn initialized() -> Server {
    let mut s = Server::start();
    let r = s.request(
        1,
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "cake-test", "version": "0"},
        }),
    );
    assert_eq!(r["result"]["serverInfo"]["name"], "cake", "{r}");
    assert!(r["result"]["capabilities"]["tools"].is_object(), "{r}");
    s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    s
}

#[test]
fn session() {
    let mut s = initialized();

    let tools = s.request(2, "tools/list", json!({}));
    let tools = tools["result"]["tools"].as_array().expect("a tool list");
    for name in [
        "check",
        "explain",
        "lower",
        "build",
        "test",
        "bench",
        "cost",
        "evolve_status",
    ] {
        let t = tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("tool `{name}` missing"));
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
        assert_eq!(t["outputSchema"]["type"], "object", "{t}");
    }

    let r = s.call(3, "check", json!({"path": "tests/check/CAKE-S005-bad.py"}));
    assert_eq!(r["isError"], false, "{r}");
    let out = &r["structuredContent"];
    assert_eq!(out["errors"], 2, "{out}");
    let first = out["findings"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "CAKE-S005")
        .expect("a CAKE-S005 finding");
    assert_eq!(first["span"]["start_line"], 22, "{first}");

    let r = s.call(4, "explain", json!({"code": "CAKE-S005"}));
    assert_eq!(r["isError"], false, "{r}");
    assert!(r["structuredContent"]["text"]
        .as_str()
        .unwrap()
        .starts_with("CAKE-S005 "));

    let r = s.call(5, "check", json!({"path": "no/such/file.py"}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(r["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("cannot read no/such/file.py"));
}

#[test]
fn malformed_lines_do_not_end_the_server() {
    let mut s = initialized();
    s.send_raw("{this is not json");
    s.send_raw("");
    s.send_raw("[1, 2");
    // Arguments of the wrong type: a tool error for that request only.
    let r = s.request(
        2,
        "tools/call",
        json!({"name": "explain", "arguments": {"code": 5}}),
    );
    assert_eq!(r["result"]["isError"], true, "{r}");
    // An unknown tool: a JSON-RPC error for that request only.
    let r = s.request(3, "tools/call", json!({"name": "no_such_tool"}));
    assert!(r.get("error").is_some(), "{r}");
    let r = s.call(4, "explain", json!({"code": "S005"}));
    assert_eq!(r["structuredContent"]["code"], "CAKE-S005", "{r}");
    assert!(s.child.try_wait().unwrap().is_none(), "the server exited");
}

#[test]
fn an_oversized_request_line_is_answered_with_an_error() {
    let mut s = initialized();
    // 17 MiB of schedule text in one request line: over the 16 MiB line cap.
    let source = "#".repeat(17 << 20);
    s.send(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                  "params": {"name": "check", "arguments": {"source": source}}}));
    let r = s.response(9);
    assert_eq!(
        r["error"]["code"],
        -32600,
        "{}",
        &r.to_string()[..200.min(r.to_string().len())]
    );
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("request too large"),
        "{r}"
    );
    // Answered, and the server reads on.
    let r = s.call(10, "explain", json!({"code": "S005"}));
    assert_eq!(r["structuredContent"]["code"], "CAKE-S005", "{r}");
}
