//! The two agent proposers, offline: the external command (a scripted agent, tests/data/agent.py)
//! and the chat-completions client against a local fixture HTTP server replaying replies in the
//! OpenAI format, malformed ones included (tests/data/chat/replies.json).

mod common;

use cake_evolve::chat::Chat;
use cake_evolve::external::Command;
use cake_evolve::search::{Event, Search, Settings};
use cake_evolve::{Budget, Stage};
use common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("cake-evolve-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn settings(dir: &std::path::Path, budget: &str) -> Settings {
    let mut s = Settings::new(
        dir.to_path_buf(),
        gemm_contract(),
        data("poor_gemm.py"),
        budget.parse::<Budget>().unwrap(),
    );
    s.model_only = true;
    s.per_generation = 4;
    s
}

#[test]
fn the_external_command_gets_a_task_and_its_candidates_and_tokens_count() {
    let dir = tempdir("external");
    let cmd = format!("python3 {}", data("agent.py").display());
    let mut search = Search::start(
        settings(&dir, "tokens=3000"),
        Box::new(Command::new(cmd, Duration::from_secs(60))),
        Some(Box::new(Toy)),
        None,
    )
    .unwrap();
    let mut notes = Vec::new();
    let why = search
        .run(&mut |e: Event| {
            if let Event::Note(n) = e {
                notes.push(n)
            }
        })
        .unwrap();
    assert_eq!(why, "budget spent: tokens", "{notes:?}");
    let pop = search.population();
    // Seed, then per generation one deeper pipeline and one broken file (the broken one is the
    // same text every time, so it is stored once).
    let deeper: Vec<_> = pop
        .iter()
        .filter(|c| c.proposer == "command" && c.stage == Stage::Estimated)
        .collect();
    assert_eq!(deeper.len(), 3, "three generations of 1000 tokens each");
    let stages: Vec<bool> = (2..=4)
        .map(|s| {
            deeper
                .iter()
                .any(|c| c.source.contains(&format!("\nSTAGES = {s}\n")))
        })
        .collect();
    assert_eq!(
        stages,
        vec![true, true, true],
        "each generation builds on the best so far"
    );
    let broken: Vec<_> = pop.iter().filter(|c| c.stage == Stage::Rejected).collect();
    assert_eq!(broken.len(), 1);
    assert!(
        broken[0].findings.as_ref().unwrap()["summary"]["errors"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(search.spent().unwrap().tokens, 3000);
    // The task directory of generation 1.
    let task = dir.join("tasks/gen-0001");
    let md = std::fs::read_to_string(task.join("TASK.md")).unwrap();
    assert!(
        md.contains("candidates/") && md.contains("gemm") && md.contains("sm_90a"),
        "{md}"
    );
    let tj: Value =
        serde_json::from_str(&std::fs::read_to_string(task.join("task.json")).unwrap()).unwrap();
    assert!(tj["contract"]
        .as_str()
        .unwrap()
        .ends_with("gemm.contract.toml"));
    assert!(tj["docs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d.as_str().unwrap().ends_with("language.md")));
    assert!(task.join("best.py").exists() && task.join("feedback.json").exists());
    let log = std::fs::read_to_string(task.join("agent.log")).unwrap();
    assert!(
        log.contains("agent: wrote 2 candidates for generation 1"),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_command_past_its_time_limit_is_killed_and_what_it_wrote_is_kept() {
    let dir = tempdir("external-timeout");
    // Writes one candidate, then hangs (in a grandchild too: the whole group must die).
    let cmd = "cp \"$(python3 -c 'import json,os; print(json.load(open(os.environ[\"CAKE_TASK\"]))[\"best\"][\"file\"])')\" candidates/same.py; sed -i 's/^STAGES = 1/STAGES = 2/' candidates/same.py; (sleep 60 &) ; sleep 60";
    let mut search = Search::start(
        settings(&dir, "wall=600s"),
        Box::new(Command::new(cmd, Duration::from_millis(1500))),
        Some(Box::new(Toy)),
        None,
    )
    .unwrap();
    let mut notes = Vec::new();
    search.generation_step(&mut |_e: Event| {}).unwrap(); // the seed
    let t = Instant::now();
    let n = search
        .generation_step(&mut |e: Event| {
            if let Event::Note(n) = e {
                notes.push(n)
            }
        })
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(20), "the limit held");
    assert_eq!(n, 1, "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("timed out")), "{notes:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A one-thread HTTP/1.1 server that answers each request with the next recorded reply and
/// keeps what it was sent.
/// Each request the fixture server received: its head (request line and headers) and JSON body.
type Requests = Arc<Mutex<Vec<(String, Value)>>>;

fn fixture_server(replies: Vec<(u16, String)>) -> (String, Requests) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for (status, body) in replies {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            let mut r = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                head += &line;
            }
            let mut buf = vec![0u8; len];
            r.read_exact(&mut buf).unwrap();
            log.lock()
                .unwrap()
                .push((head, serde_json::from_slice(&buf).unwrap_or(Value::Null)));
            let mut w = stream;
            let _ = write!(
                w,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, seen)
}

fn recorded() -> Vec<(u16, String)> {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(data("chat/replies.json")).unwrap()).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["status"].as_u64().unwrap() as u16,
                r["body"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_chat_client_counts_tokens_extracts_schedules_and_survives_bad_replies() {
    let (url, seen) = fixture_server(recorded());
    let dir = tempdir("chat");
    let chat = Chat {
        base_url: url,
        model: "fixture-model".into(),
        api_key: Some("test-key".into()),
        timeout: Duration::from_secs(10),
        temperature: 0.5,
        requests: 3,
    };
    let mut s = settings(&dir, "tokens=3000");
    s.per_generation = 3;
    let mut search = Search::start(s, Box::new(chat), Some(Box::new(Toy)), None).unwrap();
    let mut notes = Vec::new();
    let why = search
        .run(&mut |e: Event| {
            if let Event::Note(n) = e {
                notes.push(n)
            }
        })
        .unwrap();
    // 1500 + 0 + 0 in generation 1, 300 + 1200 + 50 in generation 2: 3050 >= 3000.
    assert_eq!(why, "budget spent: tokens");
    assert_eq!(search.spent().unwrap().tokens, 3050);
    let joined = notes.join("\n");
    assert!(
        joined.contains("HTTP 500: the server is overloaded"),
        "{joined}"
    );
    assert!(joined.contains("not JSON"), "{joined}");
    assert!(joined.contains("no fenced code block"), "{joined}");
    assert!(joined.contains("no choices[0].message.content"), "{joined}");
    let pop = search.population();
    let from_chat: Vec<_> = pop
        .iter()
        .filter(|c| c.proposer == "chat:fixture-model")
        .collect();
    assert_eq!(from_chat.len(), 2, "two replies carried a schedule");
    assert!(from_chat.iter().all(|c| c.stage == Stage::Estimated));
    // The best predicted is the 128-wide, 2-stage one from the second schedule.
    let best = search.best().unwrap();
    assert!(
        best.source.contains("BM, BN, BK = 128, 128, 64") && best.source.contains("\nSTAGES = 2\n")
    );
    assert!(best.cost_us.unwrap() < pop[0].cost_us.unwrap());
    // What the server saw: the endpoint, the key, the model, and a prompt with the parent.
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 6);
    let (head, body) = &seen[0];
    assert!(head.starts_with("POST /v1/chat/completions"), "{head}");
    assert!(
        head.to_ascii_lowercase()
            .contains("authorization: bearer test-key"),
        "{head}"
    );
    assert_eq!(body["model"], "fixture-model");
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("BM, BN, BK = 128, 64, 64") && user.contains("gemm-bf16"),
        "{user}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_chat_proposer_needs_a_model_from_the_environment() {
    // Only checks the message; the variable is not set in CI.
    if std::env::var(cake_evolve::chat::MODEL_VAR).is_err() {
        let e = Chat::from_env().err().unwrap();
        assert!(e.contains("CAKE_LLM_MODEL"), "{e}");
    }
}
