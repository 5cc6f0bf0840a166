//! What Cake's tests share about things from outside the repository (nvcc, the official SARIF
//! schema): a test that lacks one is reported skipped, never passed in silence.
//!
//! libtest has no run-time skip. So [`require`] gives `None` and prints
//! `SKIPPED <test>: <reason>` on stderr — written past libtest's output capture, so it shows in
//! a plain `cargo test` — and the test returns:
//!
//! ```no_run
//! # fn a_test() {
//! let Some(schema) = cake_testkit::require(std::fs::read("schema.json"), "no schema") else {
//!     return;
//! };
//! # }
//! ```
//!
//! With `CAKE_REQUIRE_ALL=1` (set by `scripts/test.sh`, so in CI) [`require`] panics instead:
//! CI provides everything a test can need, so there a missing resource is a failure. [`skip`] is
//! for what CI cannot provide (a GPU; a machine *without* a CUDA driver): it only reports.

use std::fmt::Display;
use std::io::Write;
use std::panic::Location;

/// The variable that turns every [`require`] skip into a failure.
pub const REQUIRE_ALL: &str = "CAKE_REQUIRE_ALL";

/// Whether `CAKE_REQUIRE_ALL` is set (to anything but empty or `0`).
pub fn require_all() -> bool {
    std::env::var_os(REQUIRE_ALL).is_some_and(|v| !v.is_empty() && v != "0")
}

/// The variable that makes golden-output tests rewrite their files instead of comparing.
pub const BLESS: &str = "CAKE_BLESS";

/// Whether `CAKE_BLESS` is set (to anything but empty or `0`): every golden test reads it the
/// same way, so `CAKE_BLESS=0` compares.
pub fn blessing() -> bool {
    std::env::var_os(BLESS).is_some_and(|v| !v.is_empty() && v != "0")
}

/// `Some` when the test has its resource. Otherwise: under `CAKE_REQUIRE_ALL=1` a panic naming
/// `what` and the error; without it `None`, after reporting the test skipped.
#[track_caller]
pub fn require<T, E: Display>(resource: Result<T, E>, what: &str) -> Option<T> {
    match resource {
        Ok(value) => Some(value),
        Err(e) => {
            let reason = format!("{what}: {e}");
            if require_all() {
                panic!(
                    "{}: {reason}\n({REQUIRE_ALL}=1: every resource a test needs must be \
                     present; scripts/test.sh installs them)",
                    test_name()
                );
            }
            skip(&reason);
            None
        }
    }
}

/// Report the running test skipped for a reason CI cannot satisfy either; the caller returns.
#[track_caller]
pub fn skip(reason: &str) {
    // Straight to the stream: `eprintln!` would be captured and hidden for a passing test.
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIPPED {}: {reason}",
        test_name()
    );
}

/// libtest runs each test on a thread named after it; the caller's location otherwise.
#[track_caller]
fn test_name() -> String {
    match std::thread::current().name() {
        Some(name) if name != "main" => name.to_string(),
        _ => Location::caller().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_present_resource_is_given_back() {
        assert_eq!(require(Ok::<_, String>(7), "seven"), Some(7));
    }

    #[test]
    fn a_missing_resource_skips_or_fails_as_the_environment_says() {
        let missing = || require(Err::<(), _>("not installed"), "the widget");
        if require_all() {
            let e = std::panic::catch_unwind(missing).expect_err("must fail under REQUIRE_ALL");
            let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
            assert!(msg.contains("the widget: not installed"), "{msg}");
            assert!(msg.contains("a_missing_resource"), "names the test: {msg}");
        } else {
            assert_eq!(missing(), None);
        }
    }

    #[test]
    fn the_test_is_named_by_its_thread() {
        assert!(test_name().ends_with("the_test_is_named_by_its_thread"));
    }
}
