//! The MCP server in process, through rmcp's own client over an in-memory duplex: the tool list
//! and schemas, and `check`, `explain`, `lower`, `build` and `test` on good and bad input. CPU
//! only: nothing here needs nvcc or a GPU.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::ServiceExt;
use serde_json::{json, Value};

/// The repository root: the tests name files the way an agent in the checkout would.
fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn at_root(p: &str) -> String {
    root().join(p).display().to_string()
}

/// A server whose path policy admits the checkout and the temporary directory, where these
/// tests keep their files; tools run in this process (no `cake` executable here).
fn server() -> cake_mcp::CakeServer {
    cake_mcp::CakeServer::with_config(cake_mcp::Config {
        allow: vec![root(), std::env::temp_dir()],
        ..Default::default()
    })
    .expect("the roots exist")
}

async fn connect() -> RunningService<RoleClient, ()> {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let server = server().serve(server_io).await.expect("server initializes");
        let _ = server.waiting().await;
    });
    ().serve(client_io).await.expect("client initializes")
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, args: Value) -> CallToolResult {
    let args = args.as_object().expect("arguments are an object").clone();
    client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(args))
        .await
        .unwrap_or_else(|e| panic!("tools/call {tool}: {e}"))
}

fn is_error(r: &CallToolResult) -> bool {
    r.is_error == Some(true)
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn structured(r: &CallToolResult) -> Value {
    assert!(!is_error(r), "tool error: {}", text(r));
    r.structured_content
        .clone()
        .unwrap_or_else(|| panic!("no structured content: {}", text(r)))
}

#[tokio::test]
async fn lists_every_tool_with_schemas() {
    let client = connect().await;
    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("cake")
    );
    let tools = client.list_all_tools().await.expect("tools/list");
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
        let tool = tools
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("tool `{name}` missing"));
        assert!(
            tool.description.as_deref().is_some_and(|d| !d.is_empty()),
            "{name}: no description"
        );
        let input = serde_json::to_value(&*tool.input_schema).unwrap();
        assert_eq!(input["type"], "object", "{name}: {input}");
        assert!(input["properties"].is_object(), "{name}: {input}");
        let output = tool
            .output_schema
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no output schema"));
        let output = serde_json::to_value(&**output).unwrap();
        assert_eq!(output["type"], "object", "{name}: {output}");
    }
    let schema = |name: &str| {
        let t = tools.iter().find(|t| t.name == name).unwrap();
        serde_json::to_value(&*t.input_schema).unwrap()
    };
    assert!(schema("check")["properties"]["path"].is_object());
    assert!(schema("check")["properties"]["source"].is_object());
    assert_eq!(schema("explain")["required"], json!(["code"]));
    assert!(schema("bench")["properties"]["baseline"].is_object());
    // `bench` offers the per-CTA timeline; `test` (which times nothing) does not.
    assert!(schema("bench")["properties"]["timeline"].is_object());
    assert!(schema("test")["properties"].get("timeline").is_none());
    assert!(schema("bench")["properties"]["contract"].is_object());
    client.cancel().await.ok();
}

#[tokio::test]
async fn check_reports_findings_with_lines() {
    let client = connect().await;
    let r = call(
        &client,
        "check",
        json!({"path": at_root("tests/check/CAKE-S005-bad.py")}),
    )
    .await;
    let out = structured(&r);
    assert_eq!(out["errors"], 2, "{out:#}");
    assert_eq!(out["findings"]["schema"], "cake.findings/v1");
    let s005: Vec<&Value> = out["findings"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "CAKE-S005")
        .collect();
    assert_eq!(s005.len(), 2, "{out:#}");
    assert_eq!(s005[0]["severity"], "error");
    assert_eq!(s005[0]["span"]["start_line"], 22);
    assert_eq!(s005[1]["span"]["start_line"], 23);
    // The text content carries the same document, for clients that ignore structured content.
    let from_text: Value = serde_json::from_str(&text(&r)).expect("text content is JSON");
    assert_eq!(from_text, out);

    // A clean schedule, given as text.
    let source = std::fs::read_to_string(root().join("tests/check/CAKE-S005-good.py")).unwrap();
    let out = structured(
        &call(
            &client,
            "check",
            json!({"source": source, "name": "good.py", "target": "sm_90a"}),
        )
        .await,
    );
    assert_eq!(out["errors"], 0, "{out:#}");
    assert_eq!(out["file"], "good.py");
    assert_eq!(out["unbuildable"], json!([]), "{out:#}");
    // No errors, but a declared target it cannot be built for: the agent is told.
    let source =
        std::fs::read_to_string(root().join("tests/check/V001_tcgen05_unlowered.py")).unwrap();
    let out = structured(&call(&client, "check", json!({"source": source, "name": "v.py"})).await);
    assert_eq!(out["errors"], 0, "{out:#}");
    assert_eq!(out["unbuildable"][0]["target"], "sm_100a", "{out:#}");
    assert!(out["unbuildable"][0]["constructs"].as_u64().unwrap() >= 1);
    client.cancel().await.ok();
}

#[tokio::test]
async fn cost_estimates_a_schedule_and_declines_an_uncalibrated_target() {
    let client = connect().await;
    let r = call(
        &client,
        "cost",
        json!({"path": at_root("examples/gemm_sm90.py"), "target": "sm_90a",
               "shape": "M=4096,N=7168,K=4096"}),
    )
    .await;
    let out = structured(&r);
    let e = &out["estimates"][0];
    assert!(e["time_us"].as_f64().unwrap() > 0.0, "{out:#}");
    assert!(e["bound"].is_string(), "{out:#}");
    assert!(
        out["report"].as_str().unwrap().contains("gemm on sm_90a"),
        "{out:#}"
    );
    // `gpu` takes the table measured on that card; one without a table is refused by name.
    let r = call(
        &client,
        "cost",
        json!({"path": at_root("examples/gemm_sm90.py"), "target": "sm_90a",
               "shape": "M=4096,N=7168,K=4096", "gpu": "H100"}),
    )
    .await;
    let out = structured(&r);
    let gpu = out["estimates"][0]["calibration"]["gpu"].as_str().unwrap();
    assert!(gpu.contains("H100"), "{out:#}");
    let r = call(
        &client,
        "cost",
        json!({"path": at_root("examples/gemm_sm90.py"), "target": "sm_90a",
               "shape": "M=4096,N=7168,K=4096", "gpu": "A100"}),
    )
    .await;
    assert!(
        is_error(&r) && text(&r).contains("was measured on `A100`"),
        "{}",
        text(&r)
    );
    // sm_100a lowers but has no calibration: a clear refusal, not sm_90a's numbers.
    let r = call(
        &client,
        "cost",
        json!({"path": at_root("examples/gemm_sm100.py"), "target": "sm_100a",
               "shape": "M=4096,N=4096,K=4096"}),
    )
    .await;
    assert!(
        is_error(&r) && text(&r).contains("no calibration for sm_100a"),
        "{}",
        text(&r)
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn check_with_a_shape_reports_the_cost_models_hints() {
    let client = connect().await;
    let r = call(
        &client,
        "check",
        json!({"path": at_root("tests/cost/P004_tail_wave.py"), "target": "sm_90a",
               "shape": "M=1024,N=4352,K=4096"}),
    )
    .await;
    let out = structured(&r);
    assert_eq!(out["errors"], 0, "{out:#}");
    let codes: Vec<&Value> = out["findings"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["code"])
        .collect();
    assert_eq!(codes, [&json!("CAKE-P004"), &json!("CAKE-P006")], "{out:#}");
    let r = call(
        &client,
        "check",
        json!({"path": at_root("tests/cost/P004_tail_wave.py"), "shape": "M=oops"}),
    )
    .await;
    assert!(
        is_error(&r) && text(&r).contains("is not an integer"),
        "{}",
        text(&r)
    );
    let r = call(
        &client,
        "check",
        json!({"path": at_root("tests/cost/P004_tail_wave.py"), "target": "sm_90a",
               "shape": "M=1024,N=4352,K=4096", "gpu": "A100"}),
    )
    .await;
    assert!(
        is_error(&r) && text(&r).contains("gpu: no calibration table of sm_90a"),
        "{}",
        text(&r)
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn bad_arguments_are_tool_errors() {
    let client = connect().await;
    let cases = [
        ("check", json!({"path": "no/such/file.py"}), "cannot read"),
        ("check", json!({}), "`path`"),
        (
            "check",
            json!({"path": at_root("examples/gemm_sm90.py"), "target": "sm_90"}),
            "sm_90a",
        ),
        ("explain", json!({"code": "CAKE-Z999"}), "unknown code"),
        (
            "lower",
            json!({"path": at_root("examples/gemm_sm90.py"), "target": "sm_99z"}),
            "target",
        ),
        (
            "build",
            json!({"path": "no/such/file.py", "target": "sm_90a", "out_dir": "/tmp/x"}),
            "cannot read",
        ),
        (
            "test",
            json!({"contract": "no/such.contract.toml"}),
            "contract",
        ),
        (
            "bench",
            json!({"contract": "no/such.contract.toml", "baseline": "cublas"}),
            "contract",
        ),
    ];
    for (tool, args, needle) in cases {
        let r = call(&client, tool, args.clone()).await;
        assert!(is_error(&r), "{tool} {args}: expected a tool error");
        assert!(
            text(&r).contains(needle),
            "{tool} {args}: `{}` lacks `{needle}`",
            text(&r)
        );
    }
    // The server is still there.
    let r = call(&client, "explain", json!({"code": "S005"})).await;
    assert_eq!(structured(&r)["code"], "CAKE-S005");
    client.cancel().await.ok();
}

#[tokio::test]
async fn explain_prints_the_rule_page() {
    let client = connect().await;
    let out = structured(&call(&client, "explain", json!({"code": "CAKE-S005"})).await);
    let info = cake_diag::catalog::lookup("CAKE-S005").unwrap();
    assert_eq!(out["code"], "CAKE-S005");
    assert_eq!(out["category"], "safety");
    assert_eq!(out["severity"], "error");
    assert_eq!(out["name"], info.name);
    assert_eq!(out["text"], cake_diag::catalog::explain(info));
    client.cancel().await.ok();
}

#[tokio::test]
async fn lower_gives_cuda_or_findings() {
    let client = connect().await;
    let out = structured(
        &call(
            &client,
            "lower",
            json!({"path": at_root("examples/gemm_sm90.py"), "target": "sm_90a"}),
        )
        .await,
    );
    assert_eq!(out["ok"], true, "{out:#}");
    let kernels = out["kernels"].as_array().unwrap();
    assert!(!kernels.is_empty());
    for k in kernels {
        assert!(
            k["cuda"]
                .as_str()
                .unwrap()
                .contains(k["symbol"].as_str().unwrap()),
            "{k:#}"
        );
        assert_eq!(k["target"], "sm_90a");
        assert_eq!(k["launch"]["kernel"], k["kernel"]);
    }
    // Errors in the schedule: a successful result carrying the findings.
    let out = structured(
        &call(
            &client,
            "lower",
            json!({"path": at_root("tests/check/CAKE-S005-bad.py"), "target": "sm_90a"}),
        )
        .await,
    );
    assert_eq!(out["ok"], false);
    assert_eq!(out["errors"], 2);
    assert_eq!(out["kernels"], json!([]));
    client.cancel().await.ok();
}

#[tokio::test]
async fn build_stops_at_findings_before_the_toolchain() {
    let client = connect().await;
    let dir = std::env::temp_dir().join(format!("cake-mcp-build-{}", std::process::id()));
    let out = structured(
        &call(
            &client,
            "build",
            json!({
                "path": at_root("tests/check/CAKE-S005-bad.py"),
                "target": "sm_90a",
                "out_dir": dir.display().to_string(),
            }),
        )
        .await,
    );
    assert_eq!(out["ok"], false);
    assert_eq!(out["errors"], 2);
    assert_eq!(out["kernels"], json!([]));
    let _ = std::fs::remove_dir_all(&dir);
    client.cancel().await.ok();
}

/// A stand-in cost model for the evolve_status test: deeper pipelines are predicted faster.
struct ByStages;

impl cake_evolve::Estimator for ByStages {
    fn predict_us(
        &self,
        k: &cake_ir::Kernel,
        _t: &cake_target::Target,
        _s: &std::collections::BTreeMap<String, i64>,
    ) -> Option<f64> {
        let s = k.pipelines.iter().map(|(_, p)| p.stages).max()?;
        Some(1000.0 / s as f64)
    }
}

#[tokio::test]
async fn evolve_status_reads_a_runs_archive() {
    let dir = std::env::temp_dir().join(format!("cake-mcp-evolve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut settings = cake_evolve::Settings::new(
        dir.clone(),
        root().join("kernels/gemm/gemm.contract.toml"),
        root().join("crates/cake-evolve/tests/data/poor_gemm.py"),
        "wall=60s".parse().unwrap(),
    );
    settings.model_only = true;
    settings.per_generation = 4;
    let mut search = cake_evolve::Search::start(
        settings,
        Box::new(cake_evolve::KnobMutator::new(2)),
        Some(Box::new(ByStages)),
        None,
    )
    .unwrap();
    for _ in 0..3 {
        search.generation_step(&mut |_e| {}).unwrap();
    }
    let stored = search.population().len();
    drop(search);

    let client = connect().await;
    let r = call(
        &client,
        "evolve_status",
        json!({"run": dir.display().to_string(), "recent": 3}),
    )
    .await;
    let out = structured(&r);
    assert_eq!(out["status"], "running");
    assert_eq!(out["proposer"], "knobs");
    assert_eq!(out["counts"]["candidates"], stored);
    assert_eq!(out["recent"].as_array().unwrap().len(), 3.min(stored));
    assert_eq!(out["budget"]["wall_s"], 60.0);
    assert!(out["spent"]["wall_s"].as_f64().unwrap() > 0.0);
    let best = &out["best"];
    assert!(best["source"].as_str().unwrap().contains("@cake.schedule"));
    // The seed (one stage) is predicted at 1000 us per bench shape, and the contract has three;
    // the best has more stages.
    let seed_us = 3.0 * 1000.0;
    assert!(best["predicted_us"].as_f64().unwrap() < seed_us, "{best}");
    // The same text block for clients that read only text.
    let from_text: Value = serde_json::from_str(&text(&r)).unwrap();
    assert_eq!(from_text, out);

    let r = call(
        &client,
        "evolve_status",
        json!({"run": dir.display().to_string(), "include_source": false}),
    )
    .await;
    assert!(structured(&r)["best"].get("source").is_none());

    // Not a run directory: a tool error saying so.
    let r = call(&client, "evolve_status", json!({"run": "/no/such/run"})).await;
    assert!(is_error(&r));
    assert!(text(&r).contains("not a run directory"), "{}", text(&r));
    client.cancel().await.ok();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client that keeps every progress message it is sent.
#[derive(Clone, Default)]
struct Recorder(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl rmcp::ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.0
            .lock()
            .unwrap()
            .push(params.message.unwrap_or_default());
    }
}

#[tokio::test]
async fn test_reports_each_check_as_a_progress_notification() {
    // cake-eval's fake worker (no GPU) as the evaluation worker of this server process.
    let data = root().join("crates/cake-eval/tests/data");
    // SAFETY (edition 2021 API): set once, before the server starts any worker; no other test
    // of this binary starts a worker.
    std::env::set_var(
        "CAKE_WORKER",
        format!("python3 {}", data.join("fake_worker.py").display()),
    );
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        let server = server().serve(server_io).await.expect("server initializes");
        let _ = server.waiting().await;
    });
    let recorder = Recorder::default();
    let client = recorder.clone().serve(client_io).await.expect("client");
    let args = json!({"contract": data.join("small.contract.toml").display().to_string(),
                      "kernel": data.join("good.launch.json").display().to_string(),
                      "seed": 7});
    let mut params = CallToolRequestParams::new("test".to_string())
        .with_arguments(args.as_object().unwrap().clone());
    params.meta = Some(rmcp::model::RequestMetaObject::with_progress_token(
        rmcp::model::ProgressToken(rmcp::model::NumberOrString::Number(1)),
    ));
    let r = client.call_tool(params).await.expect("tools/call test");
    let out = structured(&r);
    assert_eq!(out["verdict"], "passed", "{out:#}");
    let lines: Vec<&str> = out["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(!lines.is_empty());
    // The server sends every notification before the result; give the client's handler a
    // moment in case it runs them on another task.
    let t = std::time::Instant::now();
    while recorder.0.lock().unwrap().len() < lines.len() && t.elapsed().as_secs() < 5 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let sent = recorder.0.lock().unwrap().clone();
    assert_eq!(
        sent, lines,
        "every progress line is also a notification, in order"
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn unknown_arguments_are_refused_and_the_schemas_say_so() {
    let client = connect().await;
    let tools = client.list_all_tools().await.expect("tools/list");
    for t in &tools {
        let schema = serde_json::to_value(&*t.input_schema).unwrap();
        assert_eq!(
            schema["additionalProperties"], false,
            "{}: {schema}",
            t.name
        );
    }
    let path = at_root("tests/check/CAKE-S005-good.py");
    for (tool, args) in [
        ("check", json!({"path": path, "tagret": "sm_90a"})),
        ("explain", json!({"code": "CAKE-S005", "verbose": true})),
        (
            "lower",
            json!({"path": path, "target": "sm_90a", "out": "x"}),
        ),
        ("test", json!({"contract": "c.toml", "baseline": "cublas"})),
        ("evolve_status", json!({"run": "r", "limit": 3})),
    ] {
        let r = call(&client, tool, args.clone()).await;
        assert!(is_error(&r), "{tool} {args}: accepted");
        assert!(text(&r).contains("unknown field"), "{tool}: {}", text(&r));
    }
    client.cancel().await.ok();
}

#[tokio::test]
async fn tools_carry_annotations() {
    let client = connect().await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let hints = |name: &str| {
        let t = tools.iter().find(|t| t.name == name).unwrap();
        let a = t
            .annotations
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no annotations"));
        (
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint,
        )
    };
    for name in ["check", "explain", "lower", "cost", "evolve_status"] {
        assert_eq!(hints(name).0, Some(true), "{name} is read-only");
        assert_eq!(hints(name).3, Some(false), "{name} is closed-world");
    }
    assert_eq!(
        hints("build"),
        (Some(false), Some(false), Some(true), Some(false))
    );
    for name in ["test", "bench"] {
        assert_eq!(hints(name).0, Some(false), "{name}");
        assert_eq!(hints(name).3, Some(true), "{name} runs on a GPU host");
    }
    client.cancel().await.ok();
}

#[tokio::test]
async fn paths_outside_the_roots_are_refused() {
    let client = connect().await;
    for (tool, args) in [
        ("check", json!({"path": "/etc/passwd"})),
        ("lower", json!({"path": "/etc/passwd", "target": "sm_90a"})),
        (
            "cost",
            json!({"path": "/etc/hostname", "target": "sm_90a", "shape": "M=1"}),
        ),
        ("evolve_status", json!({"run": "/etc"})),
        ("test", json!({"contract": "/etc/passwd"})),
    ] {
        let r = call(&client, tool, args.clone()).await;
        assert!(is_error(&r), "{tool} {args}: accepted");
        assert!(text(&r).starts_with("path policy:"), "{tool}: {}", text(&r));
        assert!(
            !text(&r).contains("root:"),
            "{tool} leaks the file: {}",
            text(&r)
        );
    }
    // A symlink inside a root that points out of it is resolved first.
    let dir = std::env::temp_dir().join(format!("cake-mcp-link-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.join("passwd.py")).unwrap();
    let r = call(
        &client,
        "check",
        json!({"path": dir.join("passwd.py").display().to_string()}),
    )
    .await;
    assert!(text(&r).starts_with("path policy:"), "{}", text(&r));

    // `build` creates nothing outside the roots, even when the schedule is good.
    let outside = format!("/var/tmp/cake-mcp-outside-{}/a/b", std::process::id());
    let r = call(
        &client,
        "build",
        json!({"path": at_root("examples/gemm_sm90.py"), "target": "sm_90a", "out_dir": outside}),
    )
    .await;
    assert!(text(&r).starts_with("path policy:"), "{}", text(&r));
    assert!(!std::path::Path::new(&outside)
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .exists());
    // ... nor through a symlinked directory inside one.
    std::os::unix::fs::symlink("/var/tmp", dir.join("out")).unwrap();
    let r = call(
        &client,
        "build",
        json!({"path": at_root("examples/gemm_sm90.py"), "target": "sm_90a",
               "out_dir": dir.join("out/cake-mcp-escape").display().to_string()}),
    )
    .await;
    assert!(text(&r).starts_with("path policy:"), "{}", text(&r));
    assert!(!std::path::Path::new("/var/tmp/cake-mcp-escape").exists());
    std::fs::remove_dir_all(&dir).unwrap();
    client.cancel().await.ok();
}

#[tokio::test]
async fn oversized_and_irregular_inputs_are_refused() {
    let client = connect().await;
    let dir = std::env::temp_dir().join(format!("cake-mcp-inputs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.py");
    std::fs::write(&big, vec![b'#'; (4 << 20) + 1]).unwrap();
    let fifo = dir.join("fifo.py");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let start = std::time::Instant::now();
    for (args, needle) in [
        (
            json!({"path": big.display().to_string()}),
            "(4 MiB) a schedule may have",
        ),
        (
            json!({"source": "#".repeat((4 << 20) + 1)}),
            "over the 4 MiB limit",
        ),
        (
            json!({"path": fifo.display().to_string()}),
            "not a regular file",
        ),
        (json!({"path": dir.display().to_string()}), "a directory"),
    ] {
        let r = call(&client, "check", args).await;
        assert!(is_error(&r));
        assert!(text(&r).contains(needle), "{needle}: {}", text(&r));
        assert!(text(&r).contains("input limit"), "{}", text(&r));
    }
    // No open of the FIFO waited for a writer.
    assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
    std::fs::remove_dir_all(&dir).unwrap();
    client.cancel().await.ok();
}

#[tokio::test]
async fn an_oversized_line_is_answered_with_an_error() {
    // The transport with a small cap, in process; crates/cake-cli/tests/mcp.rs sends the real
    // binary 17 MiB.
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (server_io, client_io) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(server_io);
    tokio::spawn(async move {
        let t = cake_mcp::LineTransport::with_max_line(r, w, 1024);
        if let Ok(s) = server().serve(t).await {
            let _ = s.waiting().await;
        }
    });
    let (cr, mut cw) = tokio::io::split(client_io);
    let mut lines = BufReader::new(cr).lines();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    cw.write_all(format!("{init}\n").as_bytes()).await.unwrap();
    let first: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(first["id"], 1);
    cw.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    let big = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "check", "arguments": {"source": "#".repeat(5000)}}});
    cw.write_all(format!("{big}\n").as_bytes()).await.unwrap();
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("request too large"));
    // The connection goes on.
    let next = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"});
    cw.write_all(format!("{next}\n").as_bytes()).await.unwrap();
    let answer: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(answer["id"], 8);
    assert!(answer["result"]["tools"].is_array(), "{answer}");
}
