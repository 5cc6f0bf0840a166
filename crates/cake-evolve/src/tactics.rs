//! Tactics: what recurring verifier rejections taught, written down once for every proposer.
//! `cake distill` drafts them from run archives (the moves that kept being rejected and what
//! the candidates that passed did instead); people review and merge them into the repository's
//! tactics file (`kernels/tactics.toml`). The knob mutator skips the moves a tactic rules out;
//! the agent and chat proposers receive the tactics' text with their task.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The repository's tactics file, relative to a checkout's root.
pub const FILE: &str = "kernels/tactics.toml";

/// One lesson: a rule the candidates kept breaking, how, and what worked instead.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tactic {
    /// A stable name (`stages-overflow-pool`).
    pub id: String,
    /// The finding code the rejected candidates carried (`CAKE-S011`).
    pub rule: String,
    /// The kernel (schedule function name) whose knobs `avoid` names; a knob of the same name in
    /// another schedule can mean something else. All kernels when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The lesson in one or two sentences, for agents and people.
    pub text: String,
    /// Knob moves the knob mutator does not make.
    #[serde(default)]
    pub avoid: Vec<Avoid>,
    /// Where it was learnt: runs, counts.
    #[serde(default)]
    pub evidence: String,
}

/// A knob move to skip: setting `knob` to one of `values`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Avoid {
    pub knob: String,
    pub values: Vec<i64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tactics {
    #[serde(default, rename = "tactic")]
    pub tactics: Vec<Tactic>,
}

impl Tactics {
    pub fn parse(text: &str) -> Result<Tactics, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    pub fn load(path: &Path) -> Result<Tactics, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Tactics::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The tactics file of the checkout holding `start` (walking up), or none.
    pub fn find(start: &Path) -> Option<PathBuf> {
        let start = std::fs::canonicalize(start).unwrap_or_else(|_| start.to_path_buf());
        start
            .ancestors()
            .map(|d| d.join(FILE))
            .find(|p| p.is_file())
    }

    /// The tactics of the checkout holding `start`; none when it has no tactics file. A file
    /// that does not parse is an error: a proposer must not silently lose its lessons.
    pub fn for_checkout(start: &Path) -> Result<Tactics, String> {
        match Tactics::find(start) {
            Some(p) => Tactics::load(&p),
            None => Ok(Tactics::default()),
        }
    }

    /// The tactic that rules out setting `knob` to `value` in kernel `kernel`, if any.
    pub fn blocks(&self, kernel: &str, knob: &str, value: i64) -> Option<&Tactic> {
        self.tactics.iter().find(|t| {
            t.kernel.as_deref().is_none_or(|k| k == kernel)
                && t.avoid
                    .iter()
                    .any(|a| a.knob == knob && a.values.contains(&value))
        })
    }

    /// The tactics as a bullet list for a prompt (empty when there are none).
    pub fn prompt_text(&self) -> String {
        self.tactics
            .iter()
            .map(|t| format!("- {} ({}): {}\n", t.id, t.rule, t.text))
            .collect()
    }

    /// TOML text of these tactics.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tactic_blocks_its_moves_only() {
        let t = Tactics::parse(
            r#"
[[tactic]]
id = "stages-overflow-pool"
rule = "CAKE-S011"
kernel = "gemm"
text = "More than 4 stages of 256-wide tiles overflow shared memory."
avoid = [{ knob = "STAGES", values = [6, 8] }]
"#,
        )
        .unwrap();
        assert_eq!(
            t.blocks("gemm", "STAGES", 8).map(|t| t.id.as_str()),
            Some("stages-overflow-pool")
        );
        assert!(t.blocks("gemm", "STAGES", 4).is_none());
        assert!(t.blocks("gemm", "BN", 8).is_none());
        assert!(t.blocks("attention", "STAGES", 8).is_none());
        assert!(t
            .prompt_text()
            .contains("stages-overflow-pool (CAKE-S011): More than 4"));
        assert_eq!(Tactics::parse(&t.to_toml()).unwrap(), t);
    }

    #[test]
    fn unknown_keys_are_errors() {
        let e = Tactics::parse("[[tactic]]\nid = \"a\"\nrule = \"b\"\ntext = \"c\"\nwhen = 1\n")
            .unwrap_err();
        assert!(e.contains("when"), "{e}");
    }
}
