//! The cluster barrier of a clustered kernel (docs/language.md §5): the prologue publishes the
//! barriers with a relaxed arrive, and each thread waits for its peers once, before its first
//! operation that reaches one, and again before the kernel exits.

mod common;

/// The generated lines of `cuda`, trimmed.
fn lines(cuda: &str) -> Vec<&str> {
    cuda.lines().map(str::trim).collect()
}

/// Index of the first line at or after `from` that starts with `prefix`.
fn first(lines: &[&str], from: usize, prefix: &str) -> Option<usize> {
    (from..lines.len()).find(|&i| lines[i].starts_with(prefix))
}

const WAIT: &str = "cake_cluster_wait_once(cluster_waited);";

/// Every line starting with one of `remote` is preceded, in its role's branch, by a wait.
fn each_remote_op_waits_first(cuda: &str, remote: &[&str]) {
    let l = lines(cuda);
    let body = first(&l, 0, "extern \"C\" __global__").expect("the kernel");
    let prologue_arrive = first(&l, body, "cake_cluster_arrive_relaxed();").expect("the arrive");
    assert!(
        first(&l, body, "cake_cluster_sync();").expect("the closing barrier") > prologue_arrive,
        "no full cluster barrier before the relaxed arrive"
    );
    let roles: Vec<usize> = (body..l.len())
        .filter(|&i| l[i].starts_with("if (warp >= ") && l[i].contains("// role "))
        .chain([l.len()])
        .collect();
    let mut seen = 0;
    for span in roles.windows(2) {
        let role = &l[span[0]..span[1]];
        if let Some(op) = role
            .iter()
            .position(|s| remote.iter().any(|r| s.starts_with(r)))
        {
            let wait = role.iter().position(|s| *s == WAIT);
            assert!(
                wait.is_some_and(|w| w < op),
                "`{}` without a cluster wait before it",
                role[op]
            );
            seen += 1;
        }
    }
    assert!(seen > 0, "no remote operation found");
    let close = l
        .iter()
        .rposition(|s| *s == "cake_cluster_sync();")
        .unwrap();
    assert_eq!(l[close - 1], WAIT, "the closing barrier follows a wait");
}

#[test]
fn multicast_loads_and_cluster_releases_wait_for_the_peers() {
    let cuda = common::lower_example("gemm_cluster_sm90.py", &[]);
    each_remote_op_waits_first(&cuda, &["cake_tma_load_2d_multicast", "cake_wgmma_"]);
    // The CTA's own A load goes out before the wait.
    let l = lines(&cuda);
    let a = first(&l, 0, "cake_tma_load_2d(").unwrap();
    let multicast = first(&l, 0, "cake_tma_load_2d_multicast").unwrap();
    assert!(a < multicast && l[a..multicast].contains(&WAIT));
}

#[test]
fn a_split_k_exchange_waits_before_its_remote_arrive() {
    let cuda = common::lower_example("tinygemm_sm90.py", &[("NW", 2048)]);
    each_remote_op_waits_first(
        &cuda,
        &["{ __syncwarp(); if (threadIdx.x % 32 < 2) cake_mbar_arrive_cluster"],
    );
    // Its producer reaches no peer: its loads start with no cluster wait in front of them.
    let l = lines(&cuda);
    let load = first(&l, 0, "cake_tma_load_2d").unwrap();
    assert!(!l[..load].contains(&WAIT));
}

#[test]
fn an_unclustered_kernel_has_no_cluster_barrier() {
    let cuda = common::lower_example("tinygemm_sm90.py", &[("NW", 4096)]);
    assert!(!cuda.contains("cake_cluster_") && !cuda.contains("barrier.cluster"));
}
