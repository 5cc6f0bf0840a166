//! The built-in knob mutator's view of a schedule: its module-level integer constants (`BM, BN,
//! BK = 128, 256, 64`, `STAGES = 3`), each with the byte span of its literal, found with
//! cake-mutate's lexer; and edits that replace literals in place, leaving every other byte of
//! the file (comments, formatting) as it was.

use crate::text::{Kind, Source};

/// One module-level integer constant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Knob {
    pub name: String,
    pub value: i64,
    /// Byte range of the literal in the source.
    pub start: usize,
    pub end: usize,
    /// Written 0 or 1 and tested as a condition (`if NAME:`, `if not NAME:`): an on/off switch.
    pub switch: bool,
}

/// Every `NAME = INT` or `A, B = INT, INT` statement at module level (indent 0). Literals must be
/// plain decimal integers; anything else (an expression, a float, a call) is not a knob.
/// Constants used in a tensor's type are left out (see [`constants`]).
pub fn knobs(source: &str) -> Vec<Knob> {
    let src = Source::new(source);
    let interface = interface_names(&src);
    module_constants(&src)
        .into_iter()
        // A constant in a tensor's type is part of the kernel's interface (a fixed extent the
        // contract's shapes must match), not a schedule choice.
        .filter(|k| !interface.contains(&k.name))
        .collect()
}

/// Every module-level integer constant, as [`knobs`] finds them, the interface's fixed extents
/// included: what a contract's `[specialize]` table may set per shape.
pub fn constants(source: &str) -> Vec<Knob> {
    module_constants(&Source::new(source))
}

fn module_constants(src: &Source) -> Vec<Knob> {
    let conditions = condition_names(src);
    let mut out = Vec::new();
    for st in &src.stmts {
        if st.indent != 0 {
            continue;
        }
        let text = |i: usize| src.tok_text(&st.toks[i]);
        let Some(eq) = (0..st.toks.len()).find(|&i| text(i) == "=") else {
            continue;
        };
        // Left: NAME (, NAME)*; right: INT (, INT)*, same count, nothing else.
        let names: Vec<usize> = (0..eq).step_by(2).collect();
        let lhs_ok = names.iter().all(|&i| st.toks[i].kind == Kind::Name)
            && (1..eq).step_by(2).all(|i| text(i) == ",")
            && eq % 2 == 1;
        let rhs: Vec<usize> = (eq + 1..st.toks.len()).step_by(2).collect();
        let rhs_ok = rhs.iter().all(|&i| {
            st.toks[i].kind == Kind::Number
                && text(i).bytes().all(|b| b.is_ascii_digit() || b == b'_')
        }) && (eq + 2..st.toks.len()).step_by(2).all(|i| text(i) == ",")
            && (st.toks.len() - eq) % 2 == 0;
        if !lhs_ok || !rhs_ok || names.len() != rhs.len() {
            continue;
        }
        for (n, v) in names.iter().zip(&rhs) {
            let Ok(value) = text(*v).replace('_', "").parse::<i64>() else {
                continue;
            };
            let name = text(*n).to_string();
            out.push(Knob {
                switch: (value == 0 || value == 1) && conditions.contains(&name),
                name,
                value,
                start: st.toks[*v].start,
                end: st.toks[*v].end,
            });
        }
    }
    out
}

/// Names tested alone as a condition: `if NAME:`, `elif NAME:`, `if not NAME:`.
fn condition_names(src: &Source) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    for st in &src.stmts {
        let text = |i: usize| src.tok_text(&st.toks[i]);
        let n = st.toks.len();
        for i in 0..n {
            if !matches!(text(i), "if" | "elif") {
                continue;
            }
            let at = if i + 1 < n && text(i + 1) == "not" {
                i + 2
            } else {
                i + 1
            };
            if at + 1 < n && st.toks[at].kind == Kind::Name && text(at + 1) == ":" {
                out.insert(text(at).to_string());
            }
        }
    }
    out
}

/// Names used inside `tensor[...]` annotations (`lm.tensor[lm.bf16, "N", D]`), from the same
/// token stream as the knobs, so comments and strings never count.
fn interface_names(src: &Source) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    for st in &src.stmts {
        let text = |i: usize| src.tok_text(&st.toks[i]);
        let mut i = 0;
        while i + 1 < st.toks.len() {
            if !(st.toks[i].kind == Kind::Name && text(i) == "tensor" && text(i + 1) == "[") {
                i += 1;
                continue;
            }
            let mut depth = 0usize;
            i += 1;
            while i < st.toks.len() {
                match text(i) {
                    "[" => depth += 1,
                    "]" => depth -= 1,
                    _ if st.toks[i].kind == Kind::Name => {
                        out.insert(text(i).to_string());
                    }
                    _ => {}
                }
                i += 1;
                if depth == 0 {
                    break;
                }
            }
        }
    }
    out
}

/// Values worth trying for a knob: the other state of a switch ([`Knob::switch`]), else
/// [`neighbours`] of its value.
pub fn knob_neighbours(k: &Knob) -> Vec<i64> {
    if k.switch {
        vec![1 - k.value]
    } else {
        neighbours(k.value)
    }
}

/// Values worth trying for a count or size at `v`: ±1 for small counts (stages, group sizes),
/// halving, doubling and the steps between for sizes (tile extents, register budgets); never 0.
pub fn neighbours(v: i64) -> Vec<i64> {
    let mut out = if v <= 8 {
        vec![v - 1, v + 1]
    } else {
        let p = 1i64 << (63 - (v / 2).max(1).leading_zeros());
        vec![v / 2, v - p, v + p, v * 2]
    };
    out.retain(|&n| n > 0 && n != v);
    out.sort();
    out.dedup();
    out
}

/// `source` with the given knobs set to new values (edits applied back to front).
pub fn apply(source: &str, edits: &[(&Knob, i64)]) -> String {
    let mut edits: Vec<&(&Knob, i64)> = edits.iter().collect();
    edits.sort_by_key(|(k, _)| std::cmp::Reverse(k.start));
    let mut s = source.to_string();
    for (k, v) in edits {
        s.replace_range(k.start..k.end, &v.to_string());
    }
    s
}

/// A constant [`set`] was asked to change that is not among those it was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    pub name: String,
    /// The names there are, each once, in source order.
    pub available: Vec<String>,
}

impl Missing {
    /// The names there are, for a message: `BM, BN` or `none`.
    pub fn available_text(&self) -> String {
        if self.available.is_empty() {
            "none".into()
        } else {
            self.available.join(", ")
        }
    }
}

/// `source` with each named constant among `found` (every statement that assigns it) set to its
/// value; the first name not in `found` is an error.
pub fn set<'a>(
    source: &str,
    found: &[Knob],
    values: impl IntoIterator<Item = (&'a str, i64)>,
) -> Result<String, Missing> {
    let mut edits = Vec::new();
    for (name, value) in values {
        let before = edits.len();
        edits.extend(found.iter().filter(|k| k.name == name).map(|k| (k, value)));
        if edits.len() == before {
            let mut available: Vec<String> = Vec::new();
            for k in found {
                if !available.contains(&k.name) {
                    available.push(k.name.clone());
                }
            }
            return Err(Missing {
                name: name.to_string(),
                available,
            });
        }
    }
    Ok(apply(source, &edits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_changes_named_constants_or_names_the_missing_one() {
        let ks = knobs(SRC);
        let out = set(SRC, &ks, [("BN", 64), ("STAGES", 5)]).unwrap();
        assert!(out.contains("BM, BN, BK = 128, 64, 64\nSTAGES = 5  # comment\n"));
        let miss = set(SRC, &ks, [("BN", 64), ("Q", 1)]).unwrap_err();
        assert_eq!(miss.name, "Q");
        assert_eq!(miss.available_text(), "BM, BN, BK, STAGES");
        assert_eq!(
            set(SRC, &[], [("Q", 1)]).unwrap_err().available_text(),
            "none"
        );
    }

    const SRC: &str = "\"\"\"BM = 1 in a docstring\"\"\"\nimport cake\nBM, BN, BK = 128, 256, 64\nSTAGES = 3  # comment\nX = f(2)\nY = 1.5\n\ndef k():\n    Z = 4\n";

    #[test]
    fn module_level_integer_constants_are_knobs() {
        let ks = knobs(SRC);
        let names: Vec<(&str, i64)> = ks.iter().map(|k| (k.name.as_str(), k.value)).collect();
        assert_eq!(
            names,
            vec![("BM", 128), ("BN", 256), ("BK", 64), ("STAGES", 3)]
        );
        assert_eq!(&SRC[ks[1].start..ks[1].end], "256");
    }

    #[test]
    fn edits_change_only_the_literals() {
        let ks = knobs(SRC);
        let out = apply(SRC, &[(&ks[1], 128), (&ks[3], 4)]);
        assert!(out.contains("BM, BN, BK = 128, 128, 64\nSTAGES = 4  # comment\n"));
        assert_eq!(out.len(), SRC.len());
    }

    #[test]
    fn extents_in_a_tensor_type_are_interface_not_knobs() {
        let src = "D = 128\nBC = 64\n\ndef k(X: lm.tensor[lm.bf16, \"B\", \"N\", D],\n      S: lm.tensor[lm.f32, \"B\"]):\n    pass\n";
        let names: Vec<String> = knobs(src).into_iter().map(|k| k.name).collect();
        assert_eq!(names, ["BC"]);
        let names: Vec<String> = constants(src).into_iter().map(|k| k.name).collect();
        assert_eq!(names, ["D", "BC"]);
    }

    #[test]
    fn a_switch_turns_off_as_well_as_on() {
        let src = "AHEAD = 1\nLAZY = 0\nSTAGES = 1\nWIDE = 1\n\ndef f():\n    if AHEAD:\n        pass\n    elif not LAZY:\n        pass\n    x = WIDE + 1\n";
        let ks = knobs(src);
        let of = |n: &str| ks.iter().find(|k| k.name == n).unwrap();
        assert!(of("AHEAD").switch && of("LAZY").switch);
        assert!(!of("STAGES").switch && !of("WIDE").switch);
        assert_eq!(knob_neighbours(of("AHEAD")), vec![0]);
        assert_eq!(knob_neighbours(of("LAZY")), vec![1]);
        // A count at 1 is never tried at 0.
        assert_eq!(knob_neighbours(of("STAGES")), vec![2]);
    }

    #[test]
    fn neighbours_step_counts_by_one_and_sizes_by_powers_of_two() {
        assert_eq!(neighbours(3), vec![2, 4]);
        assert_eq!(neighbours(1), vec![2]);
        assert_eq!(neighbours(64), vec![32, 96, 128]);
        assert_eq!(neighbours(256), vec![128, 384, 512]);
        assert_eq!(neighbours(232), vec![116, 168, 296, 464]);
    }
}
