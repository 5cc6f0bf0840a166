//! The catalog is well-formed, and docs/rules.md is generated from it.

use std::collections::HashSet;
use std::path::Path;

use cake_diag::catalog;
use cake_diag::{Category, Severity};

#[test]
fn codes_are_unique_and_well_formed() {
    let mut codes = HashSet::new();
    let mut names = HashSet::new();
    for info in catalog::all() {
        assert!(codes.insert(info.code), "duplicate code {}", info.code);
        assert!(names.insert(info.name), "duplicate name {}", info.name);

        // CAKE- + category letter + three digits.
        let rest = info.code.strip_prefix("CAKE-");
        let rest = rest.unwrap_or_else(|| panic!("{} lacks the CAKE- prefix", info.code));
        let mut chars = rest.chars();
        let letter = chars.next().unwrap_or(' ');
        let digits: String = chars.collect();
        assert!(
            digits.len() == 3 && digits.bytes().all(|b| b.is_ascii_digit()),
            "{}: expected three digits after the letter",
            info.code
        );
        assert_ne!(digits, "000", "{}: numbers start at 001", info.code);
        assert_eq!(
            Category::from_letter(letter),
            Some(info.category),
            "{}: letter {letter} does not match category {}",
            info.code,
            info.category
        );
        assert_eq!(
            letter,
            info.category.letter(),
            "{}: use the uppercase letter",
            info.code
        );

        // Slugs are kebab-case: lowercase words joined by single hyphens.
        assert!(
            !info.name.is_empty()
                && info.name.split('-').all(|w| {
                    !w.is_empty()
                        && w.bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                }),
            "{}: name `{}` is not kebab-case",
            info.code,
            info.name
        );

        assert!(
            !info.summary.is_empty() && !info.summary.contains('\n'),
            "{}: summary",
            info.code
        );
        assert!(
            info.summary.ends_with('.'),
            "{}: summary is a sentence",
            info.code
        );
        assert!(
            !info.explanation.trim().is_empty(),
            "{}: explanation",
            info.code
        );
        // A "passes" example only makes sense next to a "fails" one.
        assert!(
            info.good.is_empty() || !info.bad.is_empty(),
            "{}: good example without a bad one",
            info.code
        );
        if !info.bad.is_empty() {
            assert_ne!(info.bad, info.good, "{}: examples must differ", info.code);
        }

        assert_eq!(catalog::lookup(info.code), Some(*info));
        assert!(!catalog::explain(info).is_empty());
    }
}

#[test]
fn front_end_codes_block_except_unused_value() {
    for info in catalog::all()
        .iter()
        .filter(|i| i.category == Category::Language)
    {
        let expected = if info.name == "unused-value" {
            Severity::Warning
        } else {
            Severity::Error
        };
        assert_eq!(info.severity, expected, "{}", info.code);
    }
}

#[test]
fn catalog_is_in_code_order() {
    // `ALL` is the category modules' lists, concatenated; keeping it sorted
    // makes a misplaced entry obvious in review.
    let rank = |c: Category| Category::ALL.iter().position(|&x| x == c);
    let keys: Vec<_> = catalog::all()
        .iter()
        .map(|i| (rank(i.category), i.code))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
}

/// docs/rules.md must equal `rules_markdown()`. With `CAKE_BLESS=1` the test
/// rewrites the file instead.
#[test]
fn rules_doc_is_generated_from_the_catalog() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/rules.md");
    let expected = catalog::rules_markdown();
    if cake_testkit::blessing() {
        std::fs::write(&path, &expected).expect("write docs/rules.md");
        return;
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    if actual != expected {
        panic!(
            "docs/rules.md is out of date with the catalog in crates/cake-diag/src/catalog/.\n\
             Regenerate it with:\n\n    CAKE_BLESS=1 cargo test -p cake-diag --test catalog\n"
        );
    }
}
