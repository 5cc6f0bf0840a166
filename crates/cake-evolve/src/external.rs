//! The external-agent proposer: each generation Cake writes a task directory — the statement
//! (`TASK.md`), `task.json` (contract, target, entry, budget left, documentation paths), the best
//! candidate so far and its evidence, the elites, the last generation's feedback — runs the
//! user's command there under a wall-time limit, and reads back every `candidates/*.py` the
//! command wrote. An agent that knows its token usage may write `usage.json`
//! (`{"tokens": N}`) to have it counted against the budget.
//!
//! The command runs in its own process group; on timeout the whole group is killed, and the
//! candidates written before that are still read.

use crate::propose::{docs_paths, Context, Proposal, Proposed, Proposer};
use serde_json::json;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct Command {
    /// Run with `sh -c` in the task directory.
    pub command: String,
    /// Wall-time limit per generation (also bounded by the run's wall budget).
    pub timeout: Duration,
}

impl Command {
    pub fn new(command: impl Into<String>, timeout: Duration) -> Command {
        Command {
            command: command.into(),
            timeout,
        }
    }
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Write the task directory for one generation; returns its path.
pub fn write_task(ctx: &Context, dir: &Path) -> Result<PathBuf, String> {
    let cands = dir.join("candidates");
    std::fs::create_dir_all(&cands).map_err(|e| format!("{}: {e}", cands.display()))?;
    std::fs::create_dir_all(dir.join("parents")).map_err(|e| e.to_string())?;
    let contract = std::fs::canonicalize(ctx.contract).unwrap_or(ctx.contract.to_path_buf());
    let docs = docs_paths(&contract);
    if let Some(b) = ctx.best {
        write(&dir.join("best.py"), &b.source)?;
    }
    if let Some(e) = ctx.best_evidence {
        write(
            &dir.join("best.evidence.json"),
            &serde_json::to_string_pretty(e).unwrap_or_default(),
        )?;
    }
    let mut parents = Vec::new();
    for p in ctx.parents {
        let f = dir.join("parents").join(format!("{}.py", &p.hash[..16]));
        write(&f, &p.source)?;
        parents.push(json!({"file": f, "hash": p.hash, "niche": p.niche,
                            "predicted_us": p.predicted_us, "measured_us": p.measured_us,
                            "speedup": p.speedup, "verdict": p.verdict}));
    }
    write(
        &dir.join("feedback.json"),
        &serde_json::to_string_pretty(ctx.feedback).unwrap_or_default(),
    )?;
    let task = json!({
        "schema": "cake.evolve-task/v0",
        "generation": ctx.generation,
        "contract": contract,
        "target": ctx.target,
        "entry": ctx.entry,
        "want": ctx.want,
        "candidates_dir": cands,
        "best": ctx.best.map(|b| json!({"file": dir.join("best.py"), "hash": b.hash,
            "predicted_us": b.predicted_us, "measured_us": b.measured_us, "speedup": b.speedup,
            "evidence": ctx.best_evidence.map(|_| dir.join("best.evidence.json"))})),
        "parents": parents,
        "feedback": dir.join("feedback.json"),
        "docs": docs,
        "tactics": ctx.tactics.tactics,
        "wall_left_s": ctx.wall_left_s,
    });
    write(
        &dir.join("task.json"),
        &(serde_json::to_string_pretty(&task).unwrap_or_default() + "\n"),
    )?;
    let mut md = String::new();
    let _ = writeln!(md, "# Cake task: generation {}\n", ctx.generation);
    let _ = writeln!(
        md,
        "Write up to {} new Cake IR schedules (Python syntax, parsed and never executed) for the \
         kernel `{}` on target `{}`, each faster than the best so far and still correct under \
         the workload contract `{}`. Put each as its own `.py` file in `candidates/` in this \
         directory. Cake verifies every file before anything runs on the GPU; files with error \
         findings are rejected (their findings come back next generation in `feedback.json`).\n",
        ctx.want,
        ctx.entry,
        ctx.target,
        contract.display()
    );
    if ctx.best.is_some() {
        let _ = writeln!(
            md,
            "- `best.py`: the best candidate so far{}",
            if ctx.best_evidence.is_some() {
                "; `best.evidence.json`: its evidence record (correctness, timing, speedups)"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        md,
        "- `parents/`: the best candidate of each niche (schedule structure × bottleneck)\n\
         - `feedback.json`: the last generation (errors by code and line, predicted vs measured)\n\
         - `task.json`: all of this as data\n\
         - optional: write `usage.json` as {{\"tokens\": N}} to report the tokens you used\n"
    );
    if !docs.is_empty() {
        let _ = writeln!(md, "Documentation:");
        for d in &docs {
            let _ = writeln!(md, "- {}", d.display());
        }
    }
    let tactics = ctx.tactics.prompt_text();
    if !tactics.is_empty() {
        let _ = writeln!(md, "\nLessons from earlier runs (tactics):\n{tactics}");
    }
    write(&dir.join("TASK.md"), &md)?;
    Ok(dir.to_path_buf())
}

/// How the command ended.
enum Ended {
    Success,
    Failed(String),
    TimedOut(f64),
}

/// Run `sh -c command` in `dir` with a time limit.
fn run_limited(command: &str, dir: &Path, limit: Duration) -> Result<Ended, String> {
    use std::os::unix::process::CommandExt;
    let log = std::fs::File::create(dir.join("agent.log")).map_err(|e| e.to_string())?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env("CAKE_TASK_DIR", dir)
        .env("CAKE_TASK", dir.join("task.json"))
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run `{command}`: {e}"))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(Ended::Success),
            Ok(Some(status)) => return Ok(Ended::Failed(status.to_string())),
            Ok(None) if started.elapsed() >= limit => {
                // SAFETY: kill(2) on the child's own process group; no memory is involved.
                unsafe {
                    libc::kill(-(child.id() as i32), libc::SIGKILL);
                }
                let _ = child.wait();
                return Ok(Ended::TimedOut(limit.as_secs_f64()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(25)),
            Err(e) => return Err(e.to_string()),
        }
    }
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

impl Proposer for Command {
    fn name(&self) -> String {
        "command".into()
    }

    fn propose(&mut self, ctx: &Context) -> Proposal {
        let mut out = Proposal::default();
        let dir = ctx
            .run_dir
            .join("tasks")
            .join(format!("gen-{:04}", ctx.generation));
        let _ = std::fs::remove_dir_all(&dir);
        if let Err(e) = write_task(ctx, &dir) {
            out.notes.push(format!("cannot write the task: {e}"));
            return out;
        }
        let limit = match ctx.wall_left_s {
            Some(left) => self.timeout.min(Duration::from_secs_f64(left.max(1.0))),
            None => self.timeout,
        };
        match run_limited(&self.command, &dir, limit) {
            Ok(Ended::Success) => {}
            Ok(Ended::Failed(status)) => out.notes.push(format!(
                "the command failed ({status}); agent.log ends: {}",
                tail(&dir.join("agent.log"), 3)
            )),
            Ok(Ended::TimedOut(s)) => out.notes.push(format!(
                "the command timed out after {s:.0} s and was killed; agent.log ends: {}",
                tail(&dir.join("agent.log"), 3)
            )),
            Err(e) => {
                out.notes.push(e);
                return out;
            }
        }
        if let Ok(text) = std::fs::read_to_string(dir.join("usage.json")) {
            match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(v) => out.tokens = v["tokens"].as_u64().unwrap_or(0),
                Err(e) => out.notes.push(format!("usage.json: {e}")),
            }
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("candidates"))
            .map(|rd| {
                rd.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "py"))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        let parents: Vec<String> = ctx
            .best
            .or(ctx.parents.first())
            .map(|b| vec![b.hash.clone()])
            .unwrap_or_default();
        for f in files {
            match std::fs::read_to_string(&f) {
                Ok(source) => out.candidates.push(Proposed {
                    source,
                    parents: parents.clone(),
                }),
                Err(e) => out.notes.push(format!("{}: {e}", f.display())),
            }
        }
        if out.candidates.is_empty() {
            out.notes
                .push("the command wrote no candidates/*.py".into());
        }
        out
    }
}
