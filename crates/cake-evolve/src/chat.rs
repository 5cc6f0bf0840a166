//! The chat-completions proposer: any OpenAI-compatible endpoint (`POST {base}/chat/completions`).
//! Configured from the environment — `CAKE_LLM_BASE_URL` (default `https://api.openai.com/v1`),
//! `CAKE_LLM_MODEL` (required), `CAKE_LLM_API_KEY` (sent as a bearer token when set). Each
//! request asks for one complete schedule in a fenced code block, starting from one of the
//! elites with the last generation's findings and measurements; tokens come from the reply's
//! `usage`. A failed request or a reply without a schedule is a note, never a crash, and its
//! tokens still count.

use crate::propose::{docs_paths, Context, Parent, Proposal, Proposed, Proposer};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::time::Duration;

pub struct Chat {
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    pub timeout: Duration,
    pub temperature: f64,
    /// Requests per generation (each asks for one schedule); at most the search's `want`.
    pub requests: usize,
}

pub const BASE_URL_VAR: &str = "CAKE_LLM_BASE_URL";
pub const MODEL_VAR: &str = "CAKE_LLM_MODEL";
pub const KEY_VAR: &str = "CAKE_LLM_API_KEY";

impl Chat {
    pub fn from_env() -> Result<Chat, String> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let model = var(MODEL_VAR).ok_or_else(|| {
            format!("set {MODEL_VAR} (and {BASE_URL_VAR}, {KEY_VAR} as the endpoint needs)")
        })?;
        Ok(Chat {
            base_url: var(BASE_URL_VAR).unwrap_or_else(|| "https://api.openai.com/v1".into()),
            model,
            api_key: var(KEY_VAR),
            timeout: Duration::from_secs(300),
            temperature: 0.7,
            requests: 4,
        })
    }

    fn messages(&self, ctx: &Context, parent: &Parent) -> Value {
        let contract = std::fs::read_to_string(ctx.contract).unwrap_or_default();
        let docs: Vec<String> = docs_paths(ctx.contract)
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        let system = format!(
            "You optimise GPU kernels written in Cake IR: Python-syntax schedules that Cake parses \
             (never executes), verifies and lowers to CUDA for one exact target. Every resource, \
             role, pipeline and barrier is declared; phase bits, addresses and stage indices are \
             derived by the compiler. Keep the kernel's name, parameters and semantics; change the \
             schedule to make it faster. Reply with exactly one complete schedule file in a single \
             ```python fenced block.{}",
            if docs.is_empty() {
                String::new()
            } else {
                format!(" The language and rules are documented in {}.", docs.join(", "))
            }
        );
        let tactics = ctx.tactics.prompt_text();
        let system = if tactics.is_empty() {
            system
        } else {
            format!("{system}\n\nLessons from earlier runs (tactics):\n{tactics}")
        };
        let mut user = String::new();
        let _ = writeln!(
            user,
            "Target: {}. Kernel: `{}`. The workload contract (the authority on correctness and the shapes that are timed):\n```toml\n{}\n```",
            ctx.target, ctx.entry, contract.trim()
        );
        let _ = writeln!(
            user,
            "\nStart from this schedule (predicted {} us, measured {} us, speedup {}, verdict {}):\n```python\n{}\n```",
            opt(parent.predicted_us),
            opt(parent.measured_us),
            opt(parent.speedup),
            parent.verdict.as_deref().unwrap_or("not evaluated"),
            parent.source.trim_end()
        );
        if let (Some(b), Some(e)) = (ctx.best, ctx.best_evidence) {
            if b.hash != parent.hash {
                let _ = writeln!(
                    user,
                    "\nThe best so far measured {} us (verdict {}).",
                    opt(b.measured_us),
                    e["verdict"].as_str().unwrap_or("?")
                );
            }
        }
        let lessons: Vec<String> = ctx
            .feedback
            .iter()
            .filter_map(|f| {
                if !f.errors.is_empty() {
                    Some(format!("- rejected: {}", f.errors.join("; ")))
                } else if let (Some(p), Some(m)) = (f.predicted_us, f.measured_us) {
                    Some(format!("- predicted {p:.1} us, measured {m:.1} us"))
                } else {
                    f.verdict
                        .as_ref()
                        .filter(|v| v.starts_with("failed") || v.starts_with("quarantined"))
                        .map(|v| format!("- {v}"))
                }
            })
            .take(12)
            .collect();
        if !lessons.is_empty() {
            let _ = writeln!(
                user,
                "\nWhat the last generation taught:\n{}",
                lessons.join("\n")
            );
        }
        json!([{"role": "system", "content": system}, {"role": "user", "content": user}])
    }

    /// One request (at most `timeout`); the reply's text and its token usage.
    fn request(&self, messages: Value, timeout: Duration) -> (Result<String, String>, u64) {
        let url = format!("{}/chat/completions", self.base_url.trim_end_matches('/'));
        let body = json!({"model": self.model, "messages": messages,
                          "temperature": self.temperature});
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let mut req = agent.post(&url).header("Content-Type", "application/json");
        if let Some(k) = &self.api_key {
            req = req.header("Authorization", &format!("Bearer {k}"));
        }
        let mut resp = match req.send(body.to_string()) {
            Ok(r) => r,
            Err(e) => return (Err(format!("{url}: {e}")), 0),
        };
        let status = resp.status().as_u16();
        let text = match resp.body_mut().read_to_string() {
            Ok(t) => t,
            Err(e) => return (Err(format!("{url}: reading the reply: {e}")), 0),
        };
        parse_reply(status, &text)
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.3}"))
}

/// Read a chat-completions reply: the first choice's text, and `usage` tokens (total, or
/// prompt + completion). HTTP errors and malformed bodies are errors with what was seen.
pub fn parse_reply(status: u16, body: &str) -> (Result<String, String>, u64) {
    let v: Result<Value, _> = serde_json::from_str(body);
    let tokens = v.as_ref().map_or(0, |v| {
        let u = &v["usage"];
        u["total_tokens"].as_u64().unwrap_or_else(|| {
            u["prompt_tokens"].as_u64().unwrap_or(0) + u["completion_tokens"].as_u64().unwrap_or(0)
        })
    });
    let short = || body.chars().take(200).collect::<String>();
    if !(200..300).contains(&status) {
        let msg = v
            .as_ref()
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
            .unwrap_or_else(short);
        return (Err(format!("HTTP {status}: {msg}")), tokens);
    }
    let Ok(v) = v else {
        return (Err(format!("the reply is not JSON: {}", short())), 0);
    };
    match v["choices"][0]["message"]["content"].as_str() {
        Some(t) => (Ok(t.to_string()), tokens),
        None => (
            Err(format!(
                "the reply has no choices[0].message.content: {}",
                short()
            )),
            tokens,
        ),
    }
}

/// The schedule in a reply: the first fenced block tagged `python` (or `py`), else the first
/// fenced block of any kind.
pub fn extract_code(reply: &str) -> Option<String> {
    let mut blocks = Vec::new();
    let mut rest = reply;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let (info, body) = after.split_once('\n')?;
        let Some(close) = body.find("```") else {
            break;
        };
        blocks.push((info.trim().to_ascii_lowercase(), &body[..close]));
        rest = &body[close + 3..];
    }
    let pick = blocks
        .iter()
        .find(|(info, _)| info == "python" || info == "py")
        .or(blocks.first())?;
    let code = pick.1.trim_end().to_string() + "\n";
    (!code.trim().is_empty()).then_some(code)
}

impl Proposer for Chat {
    fn name(&self) -> String {
        format!("chat:{}", self.model)
    }

    fn propose(&mut self, ctx: &Context) -> Proposal {
        let mut out = Proposal::default();
        if ctx.parents.is_empty() {
            out.notes.push("no parent to start from".into());
            return out;
        }
        let started = std::time::Instant::now();
        for i in 0..self.requests.min(ctx.want).max(1) {
            // Never past the run's wall budget.
            let timeout = match ctx.wall_left_s {
                Some(left) => {
                    let left = left - started.elapsed().as_secs_f64();
                    if left <= 0.0 {
                        out.notes
                            .push("the wall budget ran out during the proposal".into());
                        break;
                    }
                    self.timeout.min(Duration::from_secs_f64(left.max(1.0)))
                }
                None => self.timeout,
            };
            let parent = &ctx.parents[i % ctx.parents.len()];
            let (reply, tokens) = self.request(self.messages(ctx, parent), timeout);
            out.tokens += tokens;
            match reply {
                Err(e) => out.notes.push(e),
                Ok(text) => match extract_code(&text) {
                    Some(source) => out.candidates.push(Proposed {
                        source,
                        parents: vec![parent.hash.clone()],
                    }),
                    None => out.notes.push(format!(
                        "the reply has no fenced code block: {}",
                        text.chars().take(120).collect::<String>()
                    )),
                },
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_is_taken_from_the_python_fence() {
        let r = "Here:\n```text\nnotes\n```\nand\n```python\nimport cake\nX = 1\n```\nbye";
        assert_eq!(extract_code(r).unwrap(), "import cake\nX = 1\n");
        assert_eq!(extract_code("```\nA = 2\n```").unwrap(), "A = 2\n");
        assert_eq!(extract_code("no code here"), None);
        assert_eq!(extract_code("```python\nunterminated"), None);
        assert_eq!(extract_code("```python\n\n```"), None);
    }

    #[test]
    fn replies_give_text_and_tokens_or_a_reason() {
        let ok = r#"{"choices":[{"message":{"content":"hi"}}],"usage":{"total_tokens":42}}"#;
        assert_eq!(parse_reply(200, ok), (Ok("hi".into()), 42));
        let split = r#"{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#;
        assert_eq!(parse_reply(200, split).1, 7);
        let (e, _) = parse_reply(500, r#"{"error":{"message":"overloaded"}}"#);
        assert_eq!(e.unwrap_err(), "HTTP 500: overloaded");
        assert!(parse_reply(200, "<html>")
            .0
            .unwrap_err()
            .contains("not JSON"));
        let (e, t) = parse_reply(200, r#"{"choices":[],"usage":{"total_tokens":5}}"#);
        assert!(e.is_err() && t == 5);
    }
}
