//! The spinner of `cake build`, `cake test` and `cake bench`: drawn on a terminal, and not one
//! byte of it when stderr is a pipe (logs, CI, these tests). The GPU is the fake evaluation
//! worker of cake-eval's tests (`CAKE_WORKER`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cake-eval/tests/data")
        .join(name)
        .display()
        .to_string()
}

fn worker() -> String {
    format!("python3 {}", data("fake_worker.py"))
}

fn test_args() -> Vec<String> {
    [
        "test",
        &data("small.contract.toml"),
        "--kernel",
        &data("good.launch.json"),
        "--seed",
        "1",
    ]
    .map(String::from)
    .to_vec()
}

/// No spinner frame, carriage return or escape sequence.
fn assert_plain(what: &str, text: &str) {
    assert!(
        !text.contains("on the GPU") && !text.contains("with nvcc"),
        "spinner text in {what}:\n{text}"
    );
    assert!(
        !text.contains('\r') && !text.contains('\x1b'),
        "control characters in {what}: {text:?}"
    );
}

#[test]
fn cake_test_writes_no_spinner_off_a_terminal() {
    let o = Command::new(env!("CARGO_BIN_EXE_cake"))
        .env("CAKE_WORKER", worker())
        .args(test_args())
        .stdin(Stdio::null())
        .output()
        .expect("run cake");
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("verdict: passed"), "{out}");
    assert_eq!(err, "", "stderr must stay empty off a terminal");
    assert_plain("stdout", &out);
}

#[test]
fn cake_build_writes_no_spinner_off_a_terminal() {
    // With nvcc the build succeeds, without it the error names the places searched: either
    // way stderr carries no spinner.
    let dir = std::env::temp_dir().join(format!("cake-progress-build-{}", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_cake"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .env("CAKE_CACHE_DIR", dir.join("cache"))
        .args(["build", "examples/gemm_sm90.py", "--target", "sm_90a", "-o"])
        .arg(&dir)
        .stdin(Stdio::null())
        .output()
        .expect("run cake");
    assert_plain("stderr", &String::from_utf8_lossy(&o.stderr));
    assert_plain("stdout", &String::from_utf8_lossy(&o.stdout));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cake_test_spins_on_a_terminal() {
    // `script` (util-linux, in every Debian) runs the command on a pseudo-terminal.
    let cake = PathBuf::from(env!("CARGO_BIN_EXE_cake"));
    let line = std::iter::once(cake.display().to_string())
        .chain(test_args())
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let o = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("CAKE_WORKER", worker())
        .stdin(Stdio::null())
        .output()
        .expect("`script` (util-linux) runs the command on a terminal");
    let screen = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{screen}");
    assert!(screen.contains("checking on the GPU"), "{screen:?}");
    assert!(screen.contains("verdict: passed"), "{screen:?}");
}
