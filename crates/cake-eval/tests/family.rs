//! Family files (docs/dispatch.md): loading with located errors, which route takes each region
//! of the domain (overlaps, unreachable routes, what falls back), and the seeded sampler.

use cake_eval::family::{sample, Family, Shard};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A family file next to the rmsnorm contract (paths in it are relative to its directory).
fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cake-family-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rows = repo().join("kernels/rows").canonicalize().unwrap();
    let text = text.replace("ROWS", rows.to_str().unwrap());
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn the_row_families_load_and_one_route_takes_their_whole_domain() {
    for f in [
        "rmsnorm",
        "layernorm",
        "softmax",
        "add_rmsnorm",
        "quant_fp8",
    ] {
        let fam = Family::load(&repo().join(format!("kernels/rows/{f}.family.toml")))
            .unwrap_or_else(|e| panic!("{f}: {e:?}"));
        let v = fam.validate().unwrap();
        assert_eq!(v.by_route, vec![v.regions], "{f}: {v:?}");
        assert_eq!(v.fallback_regions, 0);
        assert!(v.unreachable.is_empty() && v.overlaps.is_empty());
        assert!(fam.fallback.ends_with("contract.py:rms_norm_into") || f != "rmsnorm");
    }
}

#[test]
fn regions_go_to_the_first_route_that_admits_them_and_the_rest_fall_back() {
    let path = write(
        "split.family.toml",
        r#"
name = "split"
contract = "ROWS/rmsnorm.contract.toml"
[[route]]
name = "narrow"
when = { H = { max = 4096 } }
[[route]]
name = "wide-many-rows"
when = { H = { min = 4104 }, R = { min = 64 } }
[[route]]
name = "shadowed"
when = { H = { max = 2048 } }
[fallback]
python = "ROWS/contract.py:rms_norm_into"
"#,
    );
    let fam = Family::load(&path).unwrap();
    let shape = |r: i64, h: i64| {
        let mut s = cake_eval::contract::Shape::new();
        s.insert("R".into(), r);
        s.insert("H".into(), h);
        s
    };
    assert_eq!(fam.route_of(&shape(1, 1024)), Some(0));
    assert_eq!(fam.route_of(&shape(64, 4104)), Some(1));
    // Wide rows but few of them: no route, the fallback.
    assert_eq!(fam.route_of(&shape(63, 8192)), None);
    let v = fam.validate().unwrap();
    assert!(v.fallback_regions > 0, "{v:?}");
    assert!(v
        .fallback_examples
        .iter()
        .all(|s| s["H"] >= 4104 && s["R"] < 64));
    // `shadowed` admits only what `narrow` takes first.
    assert_eq!(v.unreachable, vec!["shadowed".to_string()]);
    assert!(v
        .overlaps
        .iter()
        .all(|o| o.routes == ["narrow".to_string(), "shadowed".to_string()]));
    assert_eq!(
        v.by_route.iter().sum::<usize>() + v.fallback_regions,
        v.regions
    );
}

#[test]
fn a_guard_on_an_unknown_dimension_or_outside_the_domain_is_located() {
    let path = write(
        "bad.family.toml",
        r#"
name = "bad"
contract = "ROWS/rmsnorm.contract.toml"
[[route]]
name = "a"
when = { D = { max = 64 } }
[[route]]
name = "b"
when = { H = { min = 20000 } }
[fallback]
python = "ROWS/contract.py:no_such_file_is_fine_here"
"#,
    );
    let errs = Family::load(&path).unwrap_err();
    let text: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
    assert!(
        text.iter()
            .any(|e| e.contains("`D` is not a dimension of the contract")
                && e.contains("route[0].when.D")),
        "{text:?}"
    );
    assert!(
        text.iter()
            .any(|e| e.contains("no value of `H`") && e.contains(":9:")),
        "{text:?}"
    );
}

#[test]
fn the_sampler_is_deterministic_in_its_seed_and_stays_in_the_domain() {
    let fam = Family::load(&repo().join("kernels/rows/rmsnorm.family.toml")).unwrap();
    let c = &fam.contract;
    for shard in [Shard::Representative, Shard::Boundary, Shard::HeldOut] {
        let a = sample(c, shard, 200, 7);
        assert_eq!(a, sample(c, shard, 200, 7));
        assert_ne!(a, sample(c, shard, 200, 8));
        for s in &a {
            for d in &c.dims {
                assert!(d.contains(s[&d.name]), "{shard:?}: {s:?}");
            }
        }
    }
    // Held-out shapes are another stream: not the representative draws.
    let rep = sample(c, Shard::Representative, 200, 7);
    let held = sample(c, Shard::HeldOut, 200, 7);
    assert!(held.iter().filter(|s| rep.contains(s)).count() < 5);
    // Log-uniform rows: small and large both drawn.
    assert!(rep.iter().any(|s| s["R"] < 100) && rep.iter().any(|s| s["R"] > 10_000));
    // The boundary shard reaches each end of each dimension.
    let b = sample(c, Shard::Boundary, 200, 7);
    for d in &c.dims {
        assert!(b.iter().any(|s| s[&d.name] == d.min), "{}", d.name);
        assert!(b.iter().any(|s| s[&d.name] == d.max), "{}", d.name);
    }
}
