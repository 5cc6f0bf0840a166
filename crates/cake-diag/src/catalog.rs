//! The catalog: every finding code Cake can report, described once.
//!
//! A code is `CAKE-` + its category's letter + three digits, and never
//! changes meaning once released: agents, CI filters and rule statistics key
//! on it. The entries here are the single source for `cake explain CODE`,
//! for the SARIF `rules` array and for `docs/rules.md` ([`rules_markdown`];
//! a test keeps the file in sync).
//!
//! Each category has one module, one file under `catalog/`, written one way:
//! summaries and explanations are raw strings, and the examples are the
//! annotated files `tests/check/CAKE-<code>-bad.py` / `-good.py`, included
//! with `include_str!`, so every documented example is also a regression test.
//!
//! To add a code: define a `pub const` in the module of its category and
//! append it to that module's `ALL` ([`ALL`] is those lists concatenated),
//! add its two example files, and regenerate docs/rules.md with
//! `CAKE_BLESS=1 cargo test -p cake-diag --test catalog`. docs/diagnostics.md
//! walks through it.

use std::fmt::Write as _;

use serde::Serialize;

use crate::finding::{Category, Severity};

/// One entry of the catalog: everything `cake explain CODE` prints and
/// docs/rules.md contains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct CodeInfo {
    /// The stable code, e.g. `CAKE-L003`.
    pub code: &'static str,
    /// Kebab-case slug, e.g. `unknown-name`; also stable.
    pub name: &'static str,
    pub category: Category,
    /// Severity of a finding of this code unless the reporter overrides it.
    pub severity: Severity,
    /// One line.
    pub summary: &'static str,
    /// A paragraph or two: the contract, the reason behind it, how to fix.
    pub explanation: &'static str,
    /// A schedule that gets this finding (empty when no source can show it).
    pub bad: &'static str,
    /// The nearest schedule that does not.
    pub good: &'static str,
}

pub mod conformance;
pub mod consistency;
pub mod coverage;
pub mod language;
pub mod performance;
pub mod safety;
pub mod semantics;

/// The category modules, in catalog order ([`Category::ALL`] order).
const MODULES: &[&[&CodeInfo]] = &[
    language::ALL,
    safety::ALL,
    conformance::ALL,
    consistency::ALL,
    semantics::ALL,
    performance::ALL,
    coverage::ALL,
];

/// How many codes the modules hold together.
const COUNT: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < MODULES.len() {
        n += MODULES[i].len();
        i += 1;
    }
    n
};

/// The modules' lists, one after another.
const fn concat<const N: usize>(parts: &[&[&'static CodeInfo]]) -> [&'static CodeInfo; N] {
    let mut out = [&language::SYNTAX_ERROR; N];
    let (mut part, mut at) = (0, 0);
    while part < parts.len() {
        let mut i = 0;
        while i < parts[part].len() {
            out[at] = parts[part][i];
            at += 1;
            i += 1;
        }
        part += 1;
    }
    out
}

/// Every code, in catalog order (by category, then number): the `ALL` lists of the category
/// modules, concatenated, so a code is registered where it is defined.
pub const ALL: &[&CodeInfo] = &concat::<COUNT>(MODULES);

/// Every code, in catalog order.
pub fn all() -> &'static [&'static CodeInfo] {
    ALL
}

/// The entry for `query`: a code with or without the `CAKE-` prefix
/// (`CAKE-L003`, `L003`, `cake-l003`) or a slug (`unknown-name`), in any case.
pub fn lookup(query: &str) -> Option<&'static CodeInfo> {
    let query = query.trim();
    let bare = |code: &'static str| code.strip_prefix("CAKE-").unwrap_or(code);
    ALL.iter().copied().find(|info| {
        info.code.eq_ignore_ascii_case(query)
            || bare(info.code).eq_ignore_ascii_case(query)
            || info.name.eq_ignore_ascii_case(query)
    })
}

/// The plain-text page `cake explain CODE` prints. Example sections are
/// left out when the entry has no example.
pub fn explain(info: &CodeInfo) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} {}", info.code, info.name);
    let _ = writeln!(
        out,
        "category: {}, default severity: {}",
        info.category, info.severity
    );
    let _ = writeln!(out, "\n{}\n", info.summary);
    let _ = writeln!(out, "{}", info.explanation.trim_end());
    for (title, example) in [("Fails:", info.bad), ("Passes:", info.good)] {
        if example.trim().is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{title}\n");
        for line in example.trim_end().lines() {
            if line.is_empty() {
                out.push('\n');
            } else {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    out
}

/// One sentence per category for docs/rules.md.
fn category_description(category: Category) -> &'static str {
    match category {
        Category::Language => {
            "Front-end errors: the file is not a well-formed, well-typed Cake schedule \
             (syntax, unsupported Python, names, types, constants)."
        }
        Category::Safety => {
            "Blocking verifier rules: the schedule could race, deadlock or corrupt memory."
        }
        Category::Conformance => {
            "Blocking verifier rules: an operation breaks the contract of the instruction \
             it lowers to on the chosen target."
        }
        Category::Consistency => {
            "Blocking verifier rules: two declarations or uses of one resource disagree \
             (layout, swizzle, byte counts, stage counts)."
        }
        Category::Semantics => {
            "Blocking verifier rules: the schedule does not compute what it declares."
        }
        Category::Performance => {
            "Non-blocking: the schedule is correct but leaves performance unused."
        }
        Category::Hint => "Non-blocking: a simpler or more canonical spelling exists.",
        Category::Coverage => {
            "Non-blocking: something Cake could not check, stated so it is not assumed."
        }
    }
}

/// The Markdown anchor of a code's section in docs/rules.md: its lowercase code (`cake-l001`).
pub fn anchor(info: &CodeInfo) -> String {
    info.code.to_ascii_lowercase()
}

/// A code's section of docs/rules.md below its heading: category and severity, summary,
/// explanation, and the failing and passing examples as Python code blocks. SARIF's rule help
/// carries the same text.
pub fn rule_markdown(info: &CodeInfo) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Category: {}. Default severity: {}.\n",
        info.category, info.severity
    );
    let _ = writeln!(out, "{}\n", info.summary);
    let _ = writeln!(out, "{}", info.explanation.trim_end());
    for (title, example) in [("Fails:", info.bad), ("Passes:", info.good)] {
        if example.trim().is_empty() {
            continue;
        }
        let _ = write!(out, "\n{title}\n\n```python\n{}\n```\n", example.trim_end());
    }
    out
}

/// The whole of docs/rules.md, generated so the page cannot drift from the
/// catalog. Order: categories in [`Category::ALL`] order, codes sorted
/// within each, so the output depends only on the catalog's contents.
pub fn rules_markdown() -> String {
    let mut codes: Vec<&CodeInfo> = ALL.to_vec();
    codes.sort_by_key(|info| {
        let rank = Category::ALL.iter().position(|&c| c == info.category);
        (rank, info.code)
    });

    let mut out = String::new();
    out.push_str(
        "<!-- Generated from crates/cake-diag/src/catalog/*.rs by `catalog::rules_markdown()`. \
         Do not edit: change the catalog and run \
         `CAKE_BLESS=1 cargo test -p cake-diag --test catalog`. -->\n\n",
    );
    out.push_str("# Cake rules\n\n");
    out.push_str(
        "Every finding Cake reports carries one of the codes below. A code is `CAKE-`, \
         the letter of its category and three digits, and keeps its meaning forever. \
         `cake explain CODE` prints the same text as this page. How findings are \
         reported is described in [diagnostics.md](diagnostics.md).\n\n",
    );

    out.push_str("## Categories\n\n");
    out.push_str("| letter | category | codes | meaning |\n|---|---|---|---|\n");
    for category in Category::ALL {
        let count = codes.iter().filter(|i| i.category == category).count();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            category.letter(),
            category,
            count,
            category_description(category)
        );
    }

    out.push_str("\n## Contents\n\n");
    out.push_str("| code | name | category | severity | summary |\n|---|---|---|---|---|\n");
    for info in &codes {
        let _ = writeln!(
            out,
            "| [{}](#{}) | `{}` | {} | {} | {} |",
            info.code,
            anchor(info),
            info.name,
            info.category,
            info.severity,
            info.summary.replace('|', "\\|")
        );
    }

    for info in &codes {
        let _ = write!(
            out,
            "\n<a id=\"{}\"></a>\n\n## {} `{}`\n\n",
            anchor(info),
            info.code,
            info.name
        );
        out.push_str(&rule_markdown(info));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_accepts_every_spelling() {
        for query in [
            "CAKE-L003",
            "cake-l003",
            "L003",
            "l003",
            " L003 ",
            "unknown-name",
        ] {
            assert_eq!(lookup(query).map(|i| i.code), Some("CAKE-L003"), "{query}");
        }
        assert!(lookup("L999").is_none());
        assert!(lookup("").is_none());
        assert!(lookup("CAKE-").is_none());
    }

    /// Every entry a module defines is in its `ALL`, in the order defined: an entry left out
    /// would compile, yet `cake explain`, SARIF and docs/rules.md would not know it.
    #[test]
    fn every_entry_is_in_its_modules_list() {
        let sources = [
            (include_str!("catalog/language.rs"), language::ALL),
            (include_str!("catalog/safety.rs"), safety::ALL),
            (include_str!("catalog/conformance.rs"), conformance::ALL),
            (include_str!("catalog/consistency.rs"), consistency::ALL),
            (include_str!("catalog/semantics.rs"), semantics::ALL),
            (include_str!("catalog/performance.rs"), performance::ALL),
            (include_str!("catalog/coverage.rs"), coverage::ALL),
        ];
        assert_eq!(
            sources.len(),
            MODULES.len(),
            "a module is missing here or in MODULES"
        );
        for (source, all) in sources {
            let defined: Vec<&str> = source
                .match_indices("code: \"CAKE-")
                .map(|(i, _)| &source[i + "code: \"".len()..i + "code: \"CAKE-X000".len()])
                .collect();
            let listed: Vec<&str> = all.iter().map(|info| info.code).collect();
            assert_eq!(
                defined, listed,
                "entries defined vs. listed in the module's ALL"
            );
        }
        assert_eq!(ALL.len(), MODULES.iter().map(|m| m.len()).sum::<usize>());
    }

    #[test]
    fn explain_has_every_part() {
        let page = explain(&language::UNKNOWN_NAME);
        assert!(page
            .starts_with("CAKE-L003 unknown-name\ncategory: language, default severity: error\n"));
        assert!(page.contains("\nFails:\n\n    # CAKE-L003: "));
        assert!(page.contains("\nPasses:\n"));
        let no_examples = explain(&language::NOT_TEXT);
        assert!(!no_examples.contains("Fails:"));
    }
}
