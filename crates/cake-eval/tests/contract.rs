//! Contract parsing and validation: the shipped contracts load, and every kind of mistake is
//! reported — all of them in one run, each with its key and line.

use cake_eval::contract::{Tolerance, DISTRIBUTIONS};
use cake_eval::{Contract, ContractError};
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn parse(text: &str) -> Result<Contract, Vec<ContractError>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    Contract::parse(Path::new("t.contract.toml"), text, &dir)
}

const GOOD: &str = include_str!("data/small.contract.toml");

fn errors_of(edit: &[(&str, &str)]) -> Vec<ContractError> {
    let mut text = GOOD.to_string();
    for (from, to) in edit {
        assert!(text.contains(from), "test edit `{from}` does not apply");
        text = text.replacen(from, to, 1);
    }
    parse(&text).expect_err("the edit makes the contract invalid")
}

fn one_error(edit: &[(&str, &str)]) -> ContractError {
    let errs = errors_of(edit);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    errs.into_iter().next().unwrap()
}

#[test]
fn the_shipped_gemm_contract_loads() {
    let c = Contract::load(&root().join("kernels/gemm/gemm.contract.toml")).expect("valid");
    assert_eq!(c.entry, "gemm");
    assert_eq!(c.shape_set("bench").len(), 3);
    assert!(c.kernel.ends_with("examples/gemm_sm90.py"));
    assert!(c.oracle.ends_with("kernels/gemm/contract.py:oracle"));
    assert!(matches!(c.tolerance["C"], Tolerance::Allclose { .. }));
    assert_eq!(c.hash.len(), 64);
    let p = c.problem();
    assert_eq!(p["tensors"][2]["name"], "C");
    assert_eq!(p["tensors"][2]["role"], "output");
    assert_eq!(p["tolerance"]["C"]["policy"], "allclose");
}

#[test]
fn the_test_contract_keeps_declared_order() {
    let c = parse(GOOD).unwrap();
    let names: Vec<&str> = c.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["A", "B", "C"]);
    assert_eq!(c.check.runs, 2, "default");
    assert_eq!(c.bench.samples, 30, "default");
}

#[test]
fn syntax_errors_carry_the_parsers_position() {
    let e = one_error(&[("entry = \"good\"", "entry = good")]);
    assert_eq!(e.line_col.map(|l| l.0), Some(3));
    assert!(
        e.message.contains("string") || e.message.contains("invalid"),
        "{}",
        e.message
    );
}

#[test]
fn unknown_keys_are_errors() {
    let e = one_error(&[("[check]\n", "[check]\nretries = 3\n")]);
    assert!(
        e.message.contains("unknown field `retries`"),
        "{}",
        e.message
    );
}

#[test]
fn shapes_outside_the_domain_or_binding_wrong_dims() {
    let e = one_error(&[("{ M = 8, N = 8, K = 8 }", "{ M = 8, N = 12, K = 8 }")]);
    assert_eq!(e.key.as_deref(), Some("shapes.check[0]"));
    assert!(
        e.message
            .contains("N = 12 is outside the domain (8..=4096, multiple of 8)"),
        "{}",
        e.message
    );
    assert_eq!(e.line_col.map(|l| l.0), Some(13));
    let errs = errors_of(&[("{ M = 8, N = 8, K = 8 }", "{ M = 8, N = 8, Q = 8 }")]);
    let msgs: Vec<&str> = errs.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        msgs,
        ["dimension `K` is not bound", "`Q` is not a dimension"]
    );
}

#[test]
fn tensors_name_known_dtypes_and_dimensions() {
    let e = one_error(&[("shape = [\"M\", \"K\"]", "shape = [\"M\", \"Z\"]")]);
    assert_eq!(e.key.as_deref(), Some("tensors.A"));
    assert!(e.message.contains("`Z` in its shape is not a dimension"));
    assert_eq!(e.help.as_deref(), Some("dimensions are M, N, K"));
    let e = one_error(&[("A = { dtype = \"bf16\"", "A = { dtype = \"bfloat16\"")]);
    assert!(e.message.contains("unknown dtype `bfloat16`"));
}

#[test]
fn every_output_needs_a_tolerance_and_only_outputs_have_one() {
    let e = one_error(&[(
        "C = { policy = \"allclose\", rtol = 0.02, atol = 0.02 }",
        "",
    )]);
    assert!(
        e.message.contains("output `C` has no tolerance policy"),
        "{}",
        e.message
    );
    let errs = errors_of(&[(
        "C = { policy = \"allclose\", rtol = 0.02, atol = 0.02 }",
        "C = { policy = \"allclose\", rtol = 0.02, atol = 0.02 }\nA = { policy = \"exact\" }",
    )]);
    assert!(errs[0].message.contains("`A` is an input"), "{errs:?}");
}

#[test]
fn unknown_distribution_policy_and_function_files() {
    let e = one_error(&[("[\"normal\", \"ties\"]", "[\"normal\", \"gaussian\"]")]);
    assert!(e.message.contains("unknown distribution `gaussian`"));
    assert_eq!(
        e.help,
        Some(format!("distributions are {}", DISTRIBUTIONS.join(", ")))
    );
    let e = one_error(&[("policy = \"allclose\"", "policy = \"close\"")]);
    assert!(
        e.message.contains("unknown variant `close`"),
        "{}",
        e.message
    );
    let e = one_error(&[("function = \"oracle\"", "function = \"missing.py:oracle\"")]);
    assert_eq!(e.key.as_deref(), Some("oracle.function"));
    assert!(
        e.message.ends_with("missing.py does not exist"),
        "{}",
        e.message
    );
}

#[test]
fn too_few_samples_and_bad_expressions() {
    let e = one_error(&[("[bench]\n", "[bench]\nsamples = 10\n")]);
    assert!(e.message.contains("10 samples is too few"));
    let e = one_error(&[("flops = \"2*M*N*K\"", "flops = \"2*M*N*X\"")]);
    assert_eq!(e.key.as_deref(), Some("bench.flops"));
    assert!(e.message.contains("`X` is not a dimension"));
}

#[test]
fn every_error_is_reported_in_one_run() {
    let errs = errors_of(&[
        ("targets = [\"sm_90a\"]", "targets = [\"sm_90\"]"),
        ("[\"normal\", \"ties\"]", "[\"normal\", \"gaussian\"]"),
        ("shape = [\"M\", \"K\"]", "shape = [\"M\", \"Z\"]"),
    ]);
    assert_eq!(errs.len(), 3, "{errs:#?}");
    let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert!(text[0].contains("t.contract.toml:4:"), "{}", text[0]);
    assert!(
        text[0].contains("help: did you mean `sm_90a`?"),
        "{}",
        text[0]
    );
}

#[test]
fn numbers_must_be_finite_and_timeouts_bounded() {
    let e = one_error(&[("timeout_s = 2", "timeout_s = inf")]);
    assert_eq!(e.key.as_deref(), Some("check.timeout_s"));
    assert!(e.message.contains("inf is not a timeout"), "{}", e.message);
    let e = one_error(&[("timeout_s = 2", "timeout_s = nan")]);
    assert!(e.message.contains("NaN is not a timeout"), "{}", e.message);
    let e = one_error(&[("rtol = 0.02", "rtol = nan")]);
    assert!(
        e.message.contains("finite and non-negative"),
        "{}",
        e.message
    );
}

#[test]
fn inout_tensors_are_refused_until_supported() {
    let e = one_error(&[("role = \"output\"", "role = \"inout\"")]);
    assert_eq!(e.key.as_deref(), Some("tensors.C"));
    assert!(e.message.contains("`inout` is not supported yet"));
}

#[test]
fn scalars_have_scalar_dtypes_and_fitting_values() {
    let with = |s: &str| errors_of(&[("[inputs]\n", &format!("[scalars]\n{s}\n\n[inputs]\n"))]);
    let e = with("n = { dtype = \"i32\", value = 1.5 }");
    assert!(
        e[0].message
            .contains("1.5 is not an integer, but the dtype is i32"),
        "{e:?}"
    );
    let e = with("s = { dtype = \"fp8e4m3\", value = 1.0 }");
    assert!(
        e[0].message.contains("`fp8e4m3` is not a scalar dtype"),
        "{e:?}"
    );
    assert!(parse(&GOOD.replace(
        "[inputs]\n",
        "[scalars]\nalpha = { dtype = \"f32\", value = 0.5 }\n\n[inputs]\n"
    ))
    .is_ok());
}

#[test]
fn argmin_bound_names_a_dimension() {
    let e = one_error(&[(
        "C = { policy = \"allclose\", rtol = 0.02, atol = 0.02 }",
        "C = { policy = \"argmin_ties\", score = \"oracle\", rtol = 0.0, atol = 0.0, bound = \"Z\" }",
    )]);
    assert!(e.message.contains("`bound` names `Z`"), "{}", e.message);
    let c = parse(&GOOD.replace(
        "C = { policy = \"allclose\", rtol = 0.02, atol = 0.02 }",
        "C = { policy = \"argmin_ties\", score = \"oracle\", rtol = 0.0, atol = 0.0, bound = \"N\" }",
    ))
    .unwrap();
    assert_eq!(c.problem()["tolerance"]["C"]["bound"], "N");
}

#[test]
fn fp8_and_tf32_kernel_dtypes_match_their_contract_names() {
    use cake_eval::contract::dtype_matches;
    assert!(dtype_matches("fp8e4m3", "e4m3") && dtype_matches("fp8e5m2", "e5m2"));
    assert!(dtype_matches("f32", "tf32") && dtype_matches("bf16", "bf16"));
    assert!(!dtype_matches("bf16", "f16") && !dtype_matches("e4m3", "fp8e4m3"));
}

#[test]
fn specialize_sets_identifiers_from_dimensions() {
    let with = |t: &str| format!("{GOOD}\n[specialize]\n{t}\n");
    let c = parse(&with("BK = \"K\"\nBN = \"N\"")).expect("valid");
    assert_eq!(c.specialize["BK"], "K");
    let shape = &c.shape_set("check")[1];
    let spec = c.specialization(shape);
    assert_eq!(
        spec.iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect::<Vec<_>>(),
        [("BK", 32), ("BN", 64)]
    );
    assert_eq!(c.specialized_dim(&spec, "K"), Some(32));
    assert_eq!(c.specialized_dim(&spec, "M"), None);
    assert!(parse(GOOD).unwrap().specialize.is_empty());

    let errs = parse(&with("BK = \"Q\"")).unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert_eq!(errs[0].key.as_deref(), Some("specialize.BK"));
    assert_eq!(errs[0].message, "`Q` is not a dimension");
    assert_eq!(errs[0].help.as_deref(), Some("dimensions are M, N, K"));
    assert_eq!(
        errs[0].line_col.map(|l| l.0),
        Some(GOOD.lines().count() + 3)
    );

    let errs = parse(&with("\"block-k\" = \"K\"\n9K = \"K\"")).unwrap_err();
    let msgs: Vec<&str> = errs.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        msgs,
        [
            "`block-k` is not a constant's name",
            "`9K` is not a constant's name"
        ]
    );
    let errs = parse(&with("BK = 64")).unwrap_err();
    assert!(errs[0].message.contains("expected a string"), "{errs:?}");
}

#[test]
fn a_dimension_is_a_range_or_a_set_of_options() {
    let has = |edit: &str, want: &str| {
        let errs = errors_of(&[("M = { min = 1, max = 4096 }", edit)]);
        assert!(
            errs.iter().any(|e| e.message.contains(want)),
            "{edit}: {errs:?}"
        );
    };
    has(
        "M = { min = 1, in = [8, 64] }",
        "either a set (`in`) or a range",
    );
    has("M = { in = [] }", "at least one");
    // A shape outside the set is named with the set.
    let errs = errors_of(&[("M = { min = 1, max = 4096 }", "M = { in = [16, 64] }")]);
    assert!(
        errs.iter()
            .any(|e| e.message.contains("is outside the domain (one of 16, 64)")),
        "{errs:?}"
    );
}

/// A shape of the small contract's three dimensions.
fn mnk(m: i64, n: i64, k: i64) -> cake_eval::contract::Shape {
    [("M", m), ("N", n), ("K", k)]
        .into_iter()
        .map(|(d, v)| (d.to_string(), v))
        .collect()
}

#[test]
fn limits_bound_products_of_dimensions() {
    // The bench shape is 4096 x 4096; a limit of 2^24 admits it and nothing wider.
    let text = GOOD.replace("M = 4096, N = 4096, K = 4096", "M = 4096, N = 4096, K = 64")
        + "\n[limits]\n\"M*N*K\" = { max = 1073741824 }\n";
    let c = parse(&text).expect("valid");
    assert_eq!(c.limits.len(), 1);
    assert_eq!(c.limits[0].dims, ["M", "N", "K"]);
    let shape = |m: i64, n: i64| mnk(m, n, 1024);
    assert!(c.admits(&shape(1024, 1024)));
    assert!(!c.admits(&shape(1032, 1024)));
    assert!(!c.admits(&shape(1024, 4100))); // past N's own range
                                            // A listed shape past the limit, an unknown dimension, a product of one.
    let bad = GOOD.to_string()
        + "\n[limits]\n\"M*N\" = { max = 100 }\n\"M*Q\" = { max = 9 }\nM = { max = 9 }\n";
    let errs: Vec<String> = parse(&bad)
        .expect_err("invalid")
        .iter()
        .map(|e| e.to_string())
        .collect();
    for want in ["M·N exceeds the limit 100", "got `M*Q`", "got `M`"] {
        assert!(errs.iter().any(|e| e.contains(want)), "{want}: {errs:?}");
    }
}

#[test]
fn a_dimension_may_be_a_multiple_of_another() {
    // N a multiple of M: the check shapes (M 8, N 8; M 100, N 64) — the second is not.
    let edit = (
        "N = { min = 8, max = 4096, multiple_of = 8 }",
        "N = { min = 8, max = 4096, multiple_of = \"M\" }",
    );
    let errs = errors_of(&[edit]);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(
        errs[0].message.contains("N is not a multiple of M"),
        "{errs:?}"
    );
    assert_eq!(errs[0].key.as_deref(), Some("shapes.check[1]"), "{errs:?}");
    let c = parse(
        &GOOD
            .replacen(edit.0, edit.1, 1)
            .replace("M = 100, N = 64", "M = 16, N = 64"),
    )
    .expect("valid");
    assert_eq!(c.multiples.len(), 1);
    assert!(c.admits(&mnk(16, 64, 64)));
    assert!(!c.admits(&mnk(16, 72, 64)));
    // A name that is not another dimension.
    for bad in ["\"Q\"", "\"N\""] {
        let errs = errors_of(&[(
            edit.0,
            &format!("N = {{ min = 8, max = 4096, multiple_of = {bad} }}"),
        )]);
        assert!(
            errs.iter()
                .any(|e| e.message.contains("names no other dimension")
                    && e.help
                        .as_deref()
                        .is_some_and(|h| h.contains("dimensions are M, N, K"))),
            "{bad}: {errs:?}"
        );
    }
}
