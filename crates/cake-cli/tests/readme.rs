//! README's "Using it" block, run line by line: each command is the README's own text with its
//! placeholders filled in (`FILE` → a shipped example, `CONTRACT` → the GEMM contract, `FAMILY` → the RMSNorm family, `DIR` →
//! a scratch directory, optional `[...]` parts left out, the first of `a|b` alternatives), so a
//! README line that stops working — or a command the README names that no longer exists — fails
//! here. Lines that need a GPU are reported skipped with that reason (cake-testkit); `cake build`
//! needs nvcc, which CI provides.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The commands of the first ```sh block after "## Using it", comments stripped.
fn using_it() -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let section = readme
        .split("\n## Using it")
        .nth(1)
        .expect("a `## Using it` section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a sh block in `## Using it`");
    block
        .lines()
        .map(|l| l.split(" #").next().unwrap_or("").trim().to_string())
        .filter(|l| l.starts_with("cake "))
        .collect()
}

/// Drop `[...]` groups; pick the first of `a|b|c` alternatives.
fn plain(line: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for c in line.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace()
        .map(|w| w.split('|').next().unwrap_or(w))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The README line as arguments, placeholders filled in; `None` with the reason when this
/// machine cannot run it.
fn arguments(line: &str, scratch: &Path, run_dir: &Path) -> Result<Vec<String>, String> {
    // The shipped example for the line's target (the sm_90a one when it names none).
    let example = if line.contains("--target sm_80") {
        "examples/gemm_sm80.py"
    } else {
        "examples/gemm_sm90.py"
    };
    let mut words: Vec<String> = plain(line)
        .split_whitespace()
        .skip(1)
        .map(str::to_string)
        .collect();
    let command = words.first().cloned().unwrap_or_default();
    if ["calibrate", "test", "bench"].contains(&command.as_str())
        || (command == "family" && words.get(1).is_some_and(|w| w == "measure"))
    {
        return Err("needs a GPU".into());
    }
    // Output redirections are the shell's: stdout is captured instead.
    if let Some(i) = words.iter().position(|w| w == ">") {
        words.truncate(i);
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let prev = if i > 0 { words[i - 1].as_str() } else { "" };
        let filled = match w {
            "FILE..." | "FILE" if prev == "-o" => scratch.join("out").display().to_string(),
            "FILE..." | "FILE" => example.into(),
            "a.py" => example.into(),
            "b.py" => "examples/gemm_sm80.py".into(),
            "CONTRACT" => "kernels/gemm/gemm.contract.toml".into(),
            "FAMILY" => "kernels/rows/rmsnorm.family.toml".into(),
            "DIR" => scratch.join("build").display().to_string(),
            "RUN" => run_dir.display().to_string(),
            "..." if prev == "--budget" => "wall=60s".into(),
            _ => w.into(),
        };
        out.push(filled);
        i += 1;
    }
    // The evolution loop without a GPU: the cost model ranks and nothing runs.
    if command == "tune" || command == "evolve" {
        if let Some(b) = out.iter().position(|w| w == "--budget") {
            out[b + 1] = "wall=60s".into();
        }
        out.extend([
            "--model-only".into(),
            "--run".into(),
            run_dir.display().to_string(),
        ]);
        if command == "evolve" {
            let last = out.len() - 1;
            out[last] = scratch.join("evolve-run").display().to_string();
        }
    }
    Ok(out)
}

const INITIALIZE: &str = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2024-11-05\",\"capabilities\":{},\"clientInfo\":{\"name\":\"readme\",\"version\":\"0\"}}}\n";

#[test]
fn every_using_it_line_runs_on_a_fresh_machine() {
    let lines = using_it();
    assert!(lines.len() >= 15, "the block shrank: {lines:#?}");
    let scratch = std::env::temp_dir().join(format!("cake-readme-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let run_dir = scratch.join("tune-run");
    let has_nvcc = cake_toolchain::Toolchain::discover();
    let mut failures = Vec::new();
    // `cake report RUN` and `cake distill RUN` read the run `cake tune` made: run the lines in
    // README order, except that those wait for the tune.
    let reads_run = |l: &&String| l.starts_with("cake report") || l.starts_with("cake distill");
    let mut ordered: Vec<&String> = lines.iter().filter(|l| !reads_run(l)).collect();
    ordered.extend(lines.iter().filter(reads_run));
    for line in ordered {
        let args = match arguments(line, &scratch, &run_dir) {
            Ok(a) => a,
            Err(reason) => {
                cake_testkit::skip(&format!("`{line}`: {reason}"));
                continue;
            }
        };
        if args[0] == "build"
            && cake_testkit::require(
                has_nvcc.as_ref().map(|_| ()).map_err(|e| e.to_string()),
                "no CUDA toolchain",
            )
            .is_none()
        {
            continue;
        }
        // The MCP server speaks to a client on stdin: it gets an initialize request, answers it
        // and ends at end of input.
        let mcp = args[0] == "mcp";
        let mut child = Command::new(env!("CARGO_BIN_EXE_cake"))
            .current_dir(root())
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run cake");
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().expect("stdin");
            if mcp {
                stdin.write_all(INITIALIZE.as_bytes()).expect("write");
            }
        }
        let o = child.wait_with_output().expect("run cake");
        let answered = !mcp || String::from_utf8_lossy(&o.stdout).contains("\"serverInfo\"");
        if !o.status.success() || !answered {
            failures.push(format!(
                "`{line}` as `cake {}`: {}\n{}{}",
                args.join(" "),
                o.status,
                String::from_utf8_lossy(&o.stdout)
                    .chars()
                    .take(2000)
                    .collect::<String>(),
                String::from_utf8_lossy(&o.stderr)
                    .chars()
                    .take(2000)
                    .collect::<String>()
            ));
        }
    }
    std::fs::remove_dir_all(&scratch).ok();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn placeholders_and_optional_parts() {
    assert_eq!(
        plain("cake lower FILE --target sm_90a [--launch | --format json]"),
        "cake lower FILE --target sm_90a"
    );
    assert_eq!(
        plain("cake evolve CONTRACT --proposer knobs|command|chat"),
        "cake evolve CONTRACT --proposer knobs"
    );
}
