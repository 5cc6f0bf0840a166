//! Contract parsing never panics: arbitrary text, and the valid test contract with a random
//! slice replaced by random text (so most inputs get past the TOML parser into validation).

use cake_eval::Contract;
use proptest::prelude::*;
use std::path::Path;

const GOOD: &str = include_str!("data/small.contract.toml");

fn parse(text: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let _ = Contract::parse(Path::new("fuzz.contract.toml"), text, &dir);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_text(text in "\\PC{0,400}") {
        parse(&text);
    }

    #[test]
    fn edited_contract(start in 0usize..1400, len in 0usize..40, insert in "[ -~\\n]{0,30}") {
        let start = start.min(GOOD.len());
        let end = (start + len).min(GOOD.len());
        if GOOD.is_char_boundary(start) && GOOD.is_char_boundary(end) {
            let text = format!("{}{}{}", &GOOD[..start], insert, &GOOD[end..]);
            parse(&text);
        }
    }

    #[test]
    fn numbers_anywhere(value in prop_oneof![
        Just("nan".to_string()), Just("inf".to_string()), Just("-inf".to_string()),
        Just("1e308".to_string()), Just("-0.0".to_string()), Just("9223372036854775807".to_string()),
        Just("-9223372036854775808".to_string()), Just("0".to_string()), Just("-1".to_string()),
        any::<i64>().prop_map(|v| v.to_string()),
        any::<f64>().prop_map(|v| format!("{v:?}")),
    ], which in 0usize..6) {
        let keys = ["timeout_s = 2", "rtol = 0.02", "atol = 0.02", "min = 1", "max = 4096", "multiple_of = 8"];
        let key = keys[which];
        let name = key.split(" = ").next().unwrap_or("x");
        parse(&GOOD.replacen(key, &format!("{name} = {value}"), 1));
    }
}
