//! ptxas's notes become findings on the schedule's own lines. The notes are given here as ptxas
//! prints them, so the mapping is tested without a toolchain.

use cake_toolchain::KernelResources;

const SCHEDULE: &str = "tests/check/CAKE-M007-good.py";

fn kernel() -> (cake_diag::SourceFile, cake_ir::Kernel) {
    let path = format!("{}/../../{SCHEDULE}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).expect("the M007 schedule");
    let checked = cake_driver::check(SCHEDULE, &bytes, Some("sm_90a"));
    assert!(!checked.has_errors(), "{:?}", checked.findings);
    let k = checked.kernels.into_iter().next().expect("one kernel");
    (checked.file, k)
}

fn report(warnings: &[&str]) -> KernelResources {
    KernelResources {
        kernel: "cake_kmeans_assign".into(),
        registers: 168,
        spill_stores: 0,
        spill_loads: 0,
        stack_frame: 0,
        static_smem: 0,
        warnings: warnings.iter().map(|w| w.to_string()).collect(),
    }
}

#[test]
fn serialised_wgmma_lands_on_the_mma_line() {
    let (file, k) = kernel();
    let findings = cake_driver::resource_findings(
        &k,
        &report(&[
            "ptxas info    : (C7517) warpgroup.wait is injected in around line 3088 by compiler to allow use of registers defined by GMMA in function 'cake_kmeans_assign'",
            "ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non wgmma instructions reading accumulator registers of  a wgmma between start and end of the pipeline stage in the function 'cake_kmeans_assign'",
        ]),
        &[],
    );
    assert_eq!(findings.len(), 1, "{findings:?}");
    let f = &findings[0];
    assert_eq!(f.code, "CAKE-P002");
    assert!(f.message.contains("(C7514)"), "{}", f.message);
    // Nothing the schedule did: the lowering's waits are at fault, and the message says so.
    assert!(f.message.contains("cause: the compiler"), "{}", f.message);
    let text = &file.text;
    let line = 1 + text[..f.span.start as usize].matches('\n').count();
    let expected = 1 + text[..text.find("lm.mma(acc").unwrap()]
        .matches('\n')
        .count();
    assert_eq!(line, expected);
}

#[test]
fn a_clean_report_gives_no_findings() {
    let (_, k) = kernel();
    assert!(cake_driver::resource_findings(&k, &report(&[]), &[]).is_empty());
}

#[test]
fn serialisation_by_register_pressure_is_the_schedules() {
    let (_, k) = kernel();
    let findings = cake_driver::resource_findings(
        &k,
        &report(&["ptxas info    : (C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient register resources for the wgmma pipeline in the function 'cake_kmeans_assign'"]),
        &[],
    );
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert!(
        findings[0].message.contains("cause: the schedule"),
        "{}",
        findings[0].message
    );
}

#[test]
fn an_accumulator_written_in_flight_is_the_schedules_and_points_at_the_write() {
    let (file, k) = kernel();
    let text = &file.text;
    let at = text.find("best_d[:] = lm.select").unwrap() as u32;
    let mma = text.find("lm.mma(acc").unwrap() as u32;
    let span = |start: u32| cake_diag::Span {
        start,
        end: start + 5,
    };
    let findings = cake_driver::resource_findings(
        &k,
        &report(&["ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non wgmma instructions defining accumulator registers of a wgmma between start and end of the pipeline stage in the function 'cake_kmeans_assign'"]),
        &[cake_lower::InFlightWrite { at: span(at), mma: span(mma) }],
    );
    assert_eq!(findings.len(), 1, "{findings:?}");
    let f = &findings[0];
    assert!(f.message.contains("cause: the schedule"), "{}", f.message);
    assert_eq!(f.span.start, at);
}
