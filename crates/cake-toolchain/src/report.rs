//! Parsing `ptxas -v` output into a per-kernel resource report.

use serde::Serialize;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct KernelResources {
    pub kernel: String,
    pub registers: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    pub stack_frame: u32,
    pub static_smem: u32,
    /// ptxas warnings (e.g. C7508: setmaxnreg ignored).
    pub warnings: Vec<String>,
}

fn number_before(text: &str, unit: &str) -> Option<u32> {
    let i = text.find(unit)?;
    text[..i].split_whitespace().last()?.parse().ok()
}

/// The function a ptxas note names (`... in the function 'k'`), if any.
fn named_function(line: &str) -> Option<&str> {
    line.rsplit_once("in the function '")?.1.split('\'').next()
}

/// Read the report lines ptxas prints for each function.
pub fn parse_ptxas(log: &str) -> Vec<KernelResources> {
    let mut out: Vec<KernelResources> = Vec::new();
    let mut pending_warnings = Vec::new();
    let mut named_warnings: Vec<(String, String)> = Vec::new();
    for line in log.lines() {
        let line = line.trim();
        // Warnings, and the coded performance notes ptxas prints as info (C7514: wgmma
        // serialised; C7517: a warpgroup.wait injected) — both matter to the schedule's author.
        // A note that names its function goes to that function, wherever ptxas prints it; the
        // others to the next function compiled.
        if line.contains("warning") || line.contains("(C75") {
            match named_function(line) {
                Some(f) => named_warnings.push((f.to_string(), line.to_string())),
                None => pending_warnings.push(line.to_string()),
            }
        }
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or("").to_string();
            out.push(KernelResources {
                kernel: name,
                warnings: std::mem::take(&mut pending_warnings),
                ..Default::default()
            });
            continue;
        }
        let Some(cur) = out.last_mut() else { continue };
        if line.contains("bytes stack frame") {
            cur.stack_frame = number_before(line, "bytes stack frame").unwrap_or(0);
            cur.spill_stores = number_before(line, "bytes spill stores").unwrap_or(0);
            cur.spill_loads = number_before(line, "bytes spill loads").unwrap_or(0);
        }
        if line.contains("Used") && line.contains("registers") {
            cur.registers = number_before(line, "registers").unwrap_or(0);
            cur.static_smem = number_before(line, "bytes smem").unwrap_or(0);
        }
    }
    for (function, line) in named_warnings {
        match out.iter_mut().find(|k| k.kernel == function) {
            Some(k) => k.warnings.push(line),
            None => pending_warnings.push(line),
        }
    }
    if let Some(last) = out.last_mut() {
        last.warnings.extend(pending_warnings);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_ptxas_report() {
        let log = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'cake_gemm' for 'sm_90a'\n\
ptxas info    : Function properties for cake_gemm\n\
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
ptxas info    : Used 168 registers, used 1 barriers, 16 bytes smem, 920 bytes cmem[0]\n";
        let r = parse_ptxas(log);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].kernel, "cake_gemm");
        assert_eq!(
            (
                r[0].registers,
                r[0].stack_frame,
                r[0].spill_stores,
                r[0].spill_loads,
                r[0].static_smem
            ),
            (168, 8, 4, 12, 16)
        );
    }

    #[test]
    fn keeps_wgmma_serialisation_notes() {
        let log = "ptxas info    : (C7514) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non wgmma instructions reading accumulator registers of  a wgmma between start and end of the pipeline stage in the function 'k'\n\
ptxas info    : Compiling entry function 'k' for 'sm_90a'\n\
ptxas info    : Used 168 registers\n";
        let r = parse_ptxas(log);
        assert!(r[0].warnings[0].contains("C7514"));
    }

    #[test]
    fn attributes_a_note_to_the_function_it_names() {
        let note = "ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient register resources for the wgmma pipeline in the function 'first'";
        let log = format!(
            "ptxas info    : Compiling entry function 'first' for 'sm_90a'\n\
ptxas info    : Used 168 registers\n\
ptxas info    : Compiling entry function 'second' for 'sm_90a'\n\
{note}\n\
ptxas info    : Used 90 registers\n"
        );
        let r = parse_ptxas(&log);
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].warnings, vec![note.to_string()]);
        assert!(r[1].warnings.is_empty());
    }

    #[test]
    fn keeps_setmaxnreg_warnings() {
        let log = "ptxas warning : (C7508) Potential Performance Loss: setmaxnreg ignored; unable to determine register count at entry\n\
ptxas info    : Compiling entry function 'k' for 'sm_90a'\n\
ptxas info    : Used 10 registers\n";
        let r = parse_ptxas(log);
        assert!(r[0].warnings[0].contains("C7508"));
    }
}
