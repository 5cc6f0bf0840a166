//! CPU-only tests of the runtime's pure layer: launch.json validation, binding, grid, tensor-map
//! fields and packing (the cases python/tests/test_launch.py covered for the old ctypes
//! launcher), plus loading files and failing cleanly without a driver.

use std::collections::BTreeMap;

use cake_runtime::bind::{self, f32_to_bf16_bits, f64_to_f16_bits, row_major_strides};
use cake_runtime::dtype;
use cake_runtime::expr::Expr;
use cake_runtime::pack::{self, Packed, Planned};
use cake_runtime::spec::ArgKind;
use cake_runtime::{Device, Error, Kernel, ScalarValue, Spec, TensorDesc};
use serde_json::{json, Value};

const GIB: u64 = 1 << 30;

fn gemm_meta() -> Value {
    json!({
        "schema": "cake.launch/v0",
        "kernel": "gemm",
        "symbol": "cake_gemm",
        "target": "sm_90a",
        "cubin": "gemm.cubin",
        "block": [384, 1, 1],
        "cluster": [1, 1, 1],
        "dynamic_smem": 197632,
        "grid": {"kind": "persistent", "tiles": [["cdiv", "M", 128], ["cdiv", "N", 256]]},
        "tensors": [
            {"name": "A", "dtype": "bf16", "dims": ["M", "K"], "access": "read"},
            {"name": "B", "dtype": "bf16", "dims": ["N", "K"], "access": "read"},
            {"name": "C", "dtype": "bf16", "dims": ["M", "N"], "access": "write"}
        ],
        "scalars": [{"name": "alpha", "dtype": "f32"}],
        "args": [
            {"kind": "tensormap", "tensor": "A", "box": [64, 128], "swizzle": 128,
             "interleave": "none", "oob_fill": "zero", "l2_promotion": 256},
            {"kind": "tensormap", "tensor": "B", "box": [64, 256], "swizzle": 128,
             "interleave": "none", "oob_fill": "zero", "l2_promotion": 256},
            {"kind": "ptr", "tensor": "C"},
            {"kind": "dim", "name": "M"},
            {"kind": "dim", "name": "N"},
            {"kind": "dim", "name": "K"},
            {"kind": "scalar", "name": "alpha"}
        ]
    })
}

fn spec(m: &Value) -> Result<Spec, Error> {
    Spec::from_json(&m.to_string())
}

fn msg<T: std::fmt::Debug>(r: Result<T, Error>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

fn tensor(name: &str, shape: &[i64], dtype: &str, ptr: u64) -> TensorDesc {
    let u: Vec<u64> = shape.iter().map(|&s| s as u64).collect();
    TensorDesc {
        name: name.into(),
        dtype: dtype.into(),
        shape: shape.to_vec(),
        strides: row_major_strides(&u)
            .into_iter()
            .map(|s| s as i64)
            .collect(),
        data_ptr: ptr,
        device: Device::Cuda(0),
    }
}

/// Distinct, non-overlapping, 16-byte-aligned fake allocations.
fn gemm_tensors(m: i64, n: i64, k: i64) -> Vec<TensorDesc> {
    vec![
        tensor("A", &[m, k], "bf16", 0x10 * GIB),
        tensor("B", &[n, k], "bf16", 0x20 * GIB),
        tensor("C", &[m, n], "bf16", 0x30 * GIB),
    ]
}

fn alpha(v: f64) -> Vec<(String, ScalarValue)> {
    vec![("alpha".into(), ScalarValue::Float(v))]
}

fn bind_with(m: &Value, tensors: &[TensorDesc], sms: u32) -> Result<bind::Bound, Error> {
    bind::bind(&spec(m)?, tensors, &alpha(1.0), sms, None)
}

// ---- expressions ---------------------------------------------------------------------------

#[test]
fn eval_expr() {
    let env: BTreeMap<String, i128> = [("M".to_string(), 1000), ("N".to_string(), 300)].into();
    let cases = [
        (json!(7), 7),
        (json!("M"), 1000),
        (json!(["cdiv", "M", 128]), 8),
        (json!(["cdiv", 1024, 128]), 8),
        (json!(["cdiv", -7, 2]), -3),
        (json!(["add", "M", 24]), 1024),
        (json!(["sub", "M", 1]), 999),
        (json!(["mul", "M", 3]), 3000),
        (json!(["div", "M", 128]), 7),
        (json!(["div", -7, 2]), -4), // floor, not truncation
        (json!(["mod", "M", 128]), 104),
        (json!(["mod", -7, 2]), 1), // the divisor's sign, as Python
        (json!(["min", "M", 5]), 5),
        (json!(["max", "M", 5]), 1000),
        (json!(["mul", ["cdiv", "M", 128], ["cdiv", "N", 256]]), 16),
    ];
    for (e, want) in cases {
        let got = Expr::parse(&e, "expr").and_then(|x| x.eval(&env, "expr"));
        assert_eq!(got, Ok(want), "{e}");
    }
}

#[test]
fn eval_expr_errors() {
    let env: BTreeMap<String, i128> = [("M".to_string(), 1000)].into();
    let cases = [
        (json!(["pow", 2, 3]), "unknown op `pow`"),
        (json!("Q"), "unknown name `Q` (known: M)"),
        (json!(["add", "M", "Q"]), "unknown name `Q`"),
        (json!(["add", 1]), "malformed"),
        (json!([1, 2, 3]), "malformed"),
        (json!(["div", 1, 0]), "division by zero"),
        (json!(["cdiv", 1, ["sub", "M", "M"]]), "division by zero"),
        (json!(["mod", 1, 0]), "division by zero"),
        (json!(true), "expected an int"),
        (json!(1.5), "expected an int"),
        (json!({"op": "add"}), "expected an int"),
        (json!(["mul", u64::MAX, u64::MAX]), "arithmetic overflow"),
    ];
    for (e, want) in cases {
        let got = msg(Expr::parse(&e, "expr").and_then(|x| x.eval(&env, "expr")));
        assert!(got.contains(want), "{e}: {got}");
    }
}

#[test]
fn spec_rejects_unknown_op_and_name_statically() {
    let mut m = gemm_meta();
    m["grid"]["tiles"] = json!([["ceil", "M", 128]]);
    assert!(msg(spec(&m)).contains("unknown op `ceil`"));
    m["grid"]["tiles"] = json!([["cdiv", "X", 128]]);
    assert!(msg(spec(&m)).contains("unknown name `X`"));
    // A float scalar cannot size a grid.
    m["grid"]["tiles"] = json!(["alpha"]);
    assert!(msg(spec(&m)).contains("unknown name `alpha` (known: K, M, N)"));
}

// ---- launch.json validation ----------------------------------------------------------------

#[test]
fn spec_accepts_gemm() {
    let s = spec(&gemm_meta()).unwrap();
    assert_eq!(s.param_names(), ["A", "B", "C", "alpha"]);
    assert_eq!(s.dim_names, ["M", "K", "N"]);
    let kinds: Vec<&str> = s.args.iter().map(|a| a.kind_name()).collect();
    assert_eq!(
        kinds,
        [
            "tensormap",
            "tensormap",
            "ptr",
            "dim",
            "dim",
            "dim",
            "scalar"
        ]
    );
}

#[test]
fn spec_errors() {
    type Mutate = fn(&mut Value);
    let cases: Vec<(Mutate, &str)> = vec![
        (
            |m| m["schema"] = json!("cake.launch/v1"),
            "field `schema`: expected \"cake.launch/v0\"",
        ),
        (
            |m| m["block"] = json!([2048, 1, 1]),
            "more than 1024 threads",
        ),
        (
            |m| m["block"] = json!([128, 1]),
            "launch.json: invalid length 2",
        ),
        (
            |m| m["block"] = json!([0, 1, 1]),
            "field `block`: expected 3 positive ints",
        ),
        (|m| m["cluster"] = json!([0, 1, 1]), "field `cluster`"),
        // The image is read beside launch.json; a hostile path never reaches the file system.
        (
            |m| m["cubin"] = json!("../../etc/passwd"),
            "field `cubin`: expected a file name beside launch.json",
        ),
        (
            |m| m["cubin"] = json!("/abs/gemm.cubin"),
            "field `cubin`: expected a file name beside launch.json",
        ),
        (
            |m| m["cubin"] = json!(".hidden"),
            "field `cubin`: expected a file name beside launch.json",
        ),
        (
            |m| m["symbol"] = json!("cake_gemm\u{0}x"),
            "field `symbol`: expected a C identifier",
        ),
        (
            |m| m["symbol"] = json!("1gemm"),
            "field `symbol`: expected a C identifier",
        ),
        (
            |m| m["cluster"] = json!([1, 2, 1]),
            "cluster must be [x, 1, 1]",
        ),
        (
            |m| m["dynamic_smem"] = json!(-1),
            "launch.json: invalid value",
        ),
        (
            |m| m["grid"] = json!({"kind": "dynamic"}),
            "unknown variant `dynamic`",
        ),
        (|m| m["grid"]["tiles"] = json!([]), "non-empty list"),
        // `zero`: tensors the kernel writes, filled with zeros before it runs.
        (
            |m| m["zero"] = json!(["D"]),
            "field `zero`: `D` is not a tensor parameter",
        ),
        (
            |m| m["zero"] = json!(["alpha"]),
            "field `zero`: `alpha` is not a tensor parameter",
        ),
        (
            |m| m["zero"] = json!(["A"]),
            "field `zero`: tensor `A` is zeroed but the kernel does not write it",
        ),
        (
            |m| m["tensors"][0]["dtype"] = json!("bf17"),
            "unknown dtype 'bf17'",
        ),
        (
            |m| m["tensors"][0]["dims"] = json!(["M", -1]),
            "field `dims`",
        ),
        (
            |m| m["tensors"][0]["access"] = json!("rw"),
            "field `access`",
        ),
        (
            |m| m["args"][0]["tensor"] = json!("Z"),
            "unknown tensor 'Z' (known: A, B, C)",
        ),
        (|m| m["args"][3]["name"] = json!("Z"), "unknown dim 'Z'"),
        (
            |m| m["args"][6]["name"] = json!("beta"),
            "unknown scalar 'beta'",
        ),
        (
            |m| m["args"][2]["kind"] = json!("pointer"),
            "unknown variant `pointer`",
        ),
        (
            |m| m["args"][0]["box"] = json!([64]),
            "field `box`: expected 2 ints",
        ),
        (
            |m| m["args"][0]["box"] = json!([64, 512]),
            "box[1] must be in [1, 256]",
        ),
        (
            |m| m["args"][0]["box"] = json!([128, 128]),
            "inner box extent must be <= 128",
        ),
        (|m| m["args"][0]["box"] = json!([4, 128]), "multiple of 16"),
        (|m| m["args"][0]["swizzle"] = json!(256), "field `swizzle`"),
        (
            |m| m["args"][0]["l2_promotion"] = json!(512),
            "l2_promotion",
        ),
        (|m| m["args"][0]["oob_fill"] = json!("inf"), "oob_fill"),
        (
            |m| m["args"][0]["interleave"] = json!("64B"),
            "field `interleave`",
        ),
        (
            |m| {
                m["tensors"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "A", "dtype": "bf16", "dims": ["M"], "access": "read"}))
            },
            "duplicate tensor",
        ),
        (
            |m| {
                m["scalars"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "M", "dtype": "i32"}))
            },
            "both as dim and scalar: M",
        ),
        (
            |m| {
                m["scalars"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "A", "dtype": "i32"}))
            },
            "both as tensor and scalar: A",
        ),
        (
            |m| m["scalars"][0]["dtype"] = json!("e4m3"),
            "scalar `alpha` field `dtype`",
        ),
        (
            |m| m["kernel"] = json!(""),
            "field `kernel`: expected a non-empty string",
        ),
    ];
    for (mutate, want) in cases {
        let mut m = gemm_meta();
        mutate(&mut m);
        let got = msg(spec(&m));
        assert!(got.contains(want), "want {want:?} in {got:?}");
    }
    assert!(msg(Spec::from_json("{not json")).contains("invalid JSON"));
}

#[test]
fn nan_oob_fill_needs_float_tma_type() {
    let mut m = gemm_meta();
    m["tensors"][0]["dtype"] = json!("e4m3");
    m["args"][0]["box"] = json!([128, 128]);
    m["args"][0]["oob_fill"] = json!("nan");
    assert!(msg(spec(&m)).contains("'nan' needs a floating-point TMA type, tensor dtype is e4m3"));
    m["tensors"][0]["dtype"] = json!("bf16");
    m["args"][0]["box"] = json!([64, 128]);
    let s = spec(&m).unwrap();
    assert!(matches!(&s.args[0].kind, ArgKind::TensorMap(t) if t.oob_nan));
}

#[test]
fn golden_launch_files_validate() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/golden/cu");
    let mut n = 0;
    for e in std::fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        if p.to_string_lossy().ends_with(".launch.json") {
            let text = std::fs::read_to_string(&p).unwrap();
            Spec::from_json(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            n += 1;
        }
    }
    assert!(n >= 2);
}

// ---- dtypes --------------------------------------------------------------------------------

#[test]
fn dtype_names_aliases_and_torch_spellings() {
    assert_eq!(dtype::lookup("bf16").unwrap().name, "bf16");
    assert_eq!(dtype::lookup("bfloat16").unwrap().name, "bf16");
    assert_eq!(dtype::lookup("torch.bfloat16").unwrap().name, "bf16");
    assert_eq!(dtype::lookup("torch.float8_e4m3fn").unwrap().name, "e4m3");
    assert_eq!(dtype::lookup("fp8e5m2").unwrap().name, "e5m2");
    assert_eq!(dtype::lookup("e5m2").unwrap().tma, 0);
    assert_eq!(dtype::lookup("i8").unwrap().tma, 0);
    assert_eq!(dtype::lookup("torch.bool").unwrap().storage, "bool");
    let codes: Vec<u32> = [
        "u8", "u16", "u32", "i32", "u64", "i64", "f16", "f32", "f64", "bf16",
    ]
    .iter()
    .map(|n| dtype::lookup(n).unwrap().tma)
    .collect();
    assert_eq!(codes, (0..10).collect::<Vec<u32>>());
    assert_eq!(dtype::lookup("tf32").unwrap().tma, 11);
    assert!(msg(dtype::normalize("complex64")).contains("unknown dtype 'complex64'"));
}

// ---- binding -------------------------------------------------------------------------------

#[test]
fn bind_gemm_dims_and_persistent_grid() {
    let b = bind_with(&gemm_meta(), &gemm_tensors(4096, 7168, 4096), 132).unwrap();
    assert_eq!(
        b.dims,
        [("M".into(), 4096), ("K".into(), 4096), ("N".into(), 7168)]
    );
    // 32 * 28 = 896 tiles > 132 SMs: one CTA per SM.
    assert_eq!(b.grid, [132, 1, 1]);
    assert_eq!(b.device, 0);
}

#[test]
fn persistent_grid() {
    for (m, n, sms, want) in [
        (256, 512, 132, 4), // 2 * 2 tiles < SMs
        (1000, 1000, 132, 32),
        (8192, 8192, 132, 132),
        (0, 512, 132, 0), // empty problem: launch nothing
        (128, 256, 1, 1),
    ] {
        let b = bind_with(&gemm_meta(), &gemm_tensors(m, n, 64), sms).unwrap();
        assert_eq!(b.grid[0], want, "{m}x{n} on {sms} SMs");
        assert_eq!(b.is_empty(), want == 0);
    }
    assert!(msg(bind_with(&gemm_meta(), &gemm_tensors(128, 128, 64), 0)).contains("SM count"));
}

#[test]
fn grid_rounds_up_to_the_cluster_width() {
    let mut m = gemm_meta();
    m["cluster"] = json!([2, 1, 1]);
    // 3 tiles -> 4 CTAs.
    assert_eq!(
        bind_with(&m, &gemm_tensors(384, 256, 64), 132)
            .unwrap()
            .grid,
        [4, 1, 1]
    );
    m["grid"]["kind"] = json!("tiles");
    assert_eq!(
        bind_with(&m, &gemm_tensors(1000, 1000, 64), 132)
            .unwrap()
            .grid,
        [32, 1, 1]
    );
    assert_eq!(
        bind_with(&m, &gemm_tensors(384, 256, 64), 132)
            .unwrap()
            .grid,
        [4, 1, 1]
    );
}

#[test]
fn tiles_grid_is_one_cta_per_tile() {
    let mut m = gemm_meta();
    m["grid"]["kind"] = json!("tiles");
    let b = bind_with(&m, &gemm_tensors(8192, 8192, 64), 132).unwrap();
    assert_eq!(b.grid, [64 * 32, 1, 1]);
    m["grid"]["tiles"] = json!([["mul", "M", "N"]]);
    let huge = bind_with(&m, &gemm_tensors(1 << 16, 1 << 16, 64), 132);
    assert!(msg(huge).contains("exceeds the CUDA limit 2147483647"));
}

#[test]
fn grid_may_use_int_scalars() {
    let mut m = gemm_meta();
    m["scalars"] = json!([{"name": "alpha", "dtype": "f32"}, {"name": "splits", "dtype": "i32"}]);
    m["grid"] = json!({"kind": "tiles", "tiles": [["cdiv", "M", 128], "splits"]});
    let s = spec(&m).unwrap();
    let scalars = vec![
        ("alpha".to_string(), ScalarValue::Float(1.0)),
        ("splits".to_string(), ScalarValue::Int(3)),
    ];
    let b = bind::bind(&s, &gemm_tensors(256, 256, 64), &scalars, 132, None).unwrap();
    assert_eq!(b.grid, [6, 1, 1]);
    let neg = vec![
        scalars[0].clone(),
        ("splits".to_string(), ScalarValue::Int(-1)),
    ];
    let e = msg(bind::bind(&s, &gemm_tensors(256, 256, 64), &neg, 132, None));
    assert!(e.contains("grid tiles[1]: evaluates to -1 < 0"), "{e}");
}

#[test]
fn dim_consistency_error_message() {
    let mut ts = gemm_tensors(4096, 7168, 4096);
    ts[1] = tensor("B", &[7168, 4000], "bf16", 0x20 * GIB);
    assert_eq!(
        msg(bind_with(&gemm_meta(), &ts, 132)),
        "dim `K` is 4096 from A (dim 1) but 4000 from B (dim 1)"
    );
}

#[test]
fn bind_tensor_errors() {
    let a = |f: &dyn Fn(&mut TensorDesc)| {
        let mut t = tensor("A", &[4096, 4096], "bf16", 0x10 * GIB);
        f(&mut t);
        t
    };
    let cases: Vec<(usize, TensorDesc, &str)> = vec![
        (0, a(&|t| t.dtype = "f16".into()), "tensor `A`: expected dtype bf16, got f16"),
        (0, a(&|t| t.dtype = "torch.float16".into()), "tensor `A`: expected dtype bf16, got f16"),
        (0, a(&|t| t.dtype = "torch.complex64".into()), "tensor `A`: unsupported dtype 'torch.complex64'"),
        (0, a(&|t| { t.shape = vec![4096]; t.strides = vec![1] }), "tensor `A`: expected rank 2 (dims [M, K]), got rank 1 (shape [4096])"),
        (0, a(&|t| t.strides = vec![1]), "tensor `A`: 1 strides for rank 2"),
        (0, a(&|t| t.shape[0] = -1), "tensor `A`: negative extent"),
        (0, a(&|t| t.device = Device::Other("cpu".into())), "tensor `A`: expected a CUDA tensor, got one on cpu"),
        (1, { let mut t = tensor("B", &[7168, 4096], "bf16", 0x20 * GIB); t.device = Device::Cuda(1); t },
         "tensor `B`: expected a CUDA tensor on cuda:0 (the launch device), got one on cuda:1"),
        (0, a(&|t| t.data_ptr += 8), "tensor `A`: data_ptr must be 16-byte aligned, got 0x400000008 (remainder 8)"),
        (0, a(&|t| t.strides = vec![1, 4096]), "tensor `A`: expected a contiguous row-major tensor, got shape [4096, 4096] with strides [1, 4096] (expected strides [4096, 1]); call .contiguous()"),
        (0, a(&|t| t.strides = vec![8192, 1]), "expected a contiguous row-major tensor"),
        (2, tensor("C", &[4096, 7168], "bf16", 0x10 * GIB), "tensor `C` (access write) overlaps tensor `A` in memory"),
        (2, tensor("C", &[4096, 7168], "bf16", 0x10 * GIB + 4096 * 4096 * 2 - 16), "overlaps tensor `A`"),
    ];
    for (which, t, want) in cases {
        let mut ts = gemm_tensors(4096, 7168, 4096);
        ts[which] = t;
        let got = msg(bind_with(&gemm_meta(), &ts, 132));
        assert!(got.contains(want), "want {want:?} in {got:?}");
    }
    // Adjacent buffers do not overlap; reading tensors may alias each other.
    let mut ts = gemm_tensors(4096, 7168, 4096);
    ts[2].data_ptr = 0x10 * GIB + 4096 * 4096 * 2;
    ts[1].data_ptr = 0x10 * GIB;
    ts[1].shape = vec![4096, 4096];
    ts[1].strides = vec![4096, 1];
    ts[2].shape = vec![4096, 4096];
    ts[2].strides = vec![4096, 1];
    assert!(bind_with(&gemm_meta(), &ts, 132).is_ok());
}

#[test]
fn explicit_device_must_match_every_tensor() {
    let s = spec(&gemm_meta()).unwrap();
    let ts = gemm_tensors(256, 256, 64);
    let e = msg(bind::bind(&s, &ts, &alpha(1.0), 132, Some(1)));
    assert!(
        e.contains("tensor `A`: expected a CUDA tensor on cuda:1"),
        "{e}"
    );
    let mut ts1 = ts.clone();
    for t in &mut ts1 {
        t.device = Device::Cuda(1);
    }
    assert_eq!(
        bind::bind(&s, &ts1, &alpha(1.0), 132, None).unwrap().device,
        1
    );
}

#[test]
fn fixed_dims() {
    let mut m = gemm_meta();
    m["tensors"][0]["dims"] = json!(["M", 4096]);
    assert!(bind_with(&m, &gemm_tensors(4096, 7168, 4096), 132).is_ok());
    m["tensors"][0]["dims"] = json!(["M", 64]);
    assert!(msg(bind_with(&m, &gemm_tensors(4096, 7168, 4096), 132))
        .contains("tensor `A` dim 1: expected fixed extent 64, got 4096"));
}

#[test]
fn size_one_dim_strides_do_not_matter() {
    // torch may report any stride for a size-1 dimension of a contiguous tensor.
    let mut a = tensor("A", &[1, 64], "bf16", 0x10 * GIB);
    a.strides = vec![1, 1];
    let ts = vec![
        a,
        tensor("B", &[256, 64], "bf16", 0x20 * GIB),
        tensor("C", &[1, 256], "bf16", 0x30 * GIB),
    ];
    let s = spec(&gemm_meta()).unwrap();
    let b = bind::bind(&s, &ts, &alpha(1.0), 132, None).unwrap();
    let plan = pack::plan(&s, &b).unwrap();
    let Planned::TensorMap(f) = &plan[0] else {
        panic!()
    };
    assert_eq!(f.global_strides, [128]);
}

#[test]
fn argument_errors() {
    let s = spec(&gemm_meta()).unwrap();
    let ts = gemm_tensors(256, 256, 64);
    let e = msg(bind::bind(&s, &ts[..2], &alpha(1.0), 132, None));
    assert_eq!(
        e,
        "kernel `gemm`: missing argument(s) C (expected: A, B, C, alpha)"
    );
    let e = msg(bind::bind(&s, &ts, &[], 132, None));
    assert!(e.contains("missing argument(s) alpha"), "{e}");
    let mut extra = ts.clone();
    extra.push(tensor("D", &[1], "bf16", 0x40 * GIB));
    assert!(msg(bind::bind(&s, &extra, &alpha(1.0), 132, None)).contains("unknown argument `D`"));
    let mut twice = ts.clone();
    twice.push(ts[0].clone());
    assert!(
        msg(bind::bind(&s, &twice, &alpha(1.0), 132, None)).contains("argument `A` given twice")
    );
    let as_scalar = vec![("A".to_string(), ScalarValue::Int(1))];
    assert!(msg(bind::bind(&s, &ts[1..], &as_scalar, 132, None))
        .contains("tensor `A`: expected a tensor, got a scalar"));
    let mut as_tensor = ts.clone();
    as_tensor.push(tensor("alpha", &[1], "f32", 0x40 * GIB));
    assert!(msg(bind::bind(&s, &as_tensor, &[], 132, None))
        .contains("scalar `alpha`: expected a number for f32, got a tensor"));
}

#[test]
fn scalar_errors() {
    let s = spec(&gemm_meta()).unwrap();
    let ts = gemm_tensors(256, 256, 64);
    let one = |v: ScalarValue| vec![("alpha".to_string(), v)];
    let e = msg(bind::bind(
        &s,
        &ts,
        &one(ScalarValue::Other("str".into())),
        132,
        None,
    ));
    assert_eq!(e, "scalar `alpha`: expected a number for f32, got str");
    assert!(msg(bind::bind(
        &s,
        &ts,
        &one(ScalarValue::Bool(true)),
        132,
        None
    ))
    .contains("got bool"));
    assert!(msg(bind::bind(
        &s,
        &ts,
        &one(ScalarValue::Float(1e39)),
        132,
        None
    ))
    .contains("out of range for f32"));
    assert!(bind::bind(&s, &ts, &one(ScalarValue::Int(2)), 132, None).is_ok());
    let mut m = gemm_meta();
    m["scalars"][0]["dtype"] = json!("i32");
    let s = spec(&m).unwrap();
    let e = msg(bind::bind(
        &s,
        &ts,
        &one(ScalarValue::Int(1 << 31)),
        132,
        None,
    ));
    assert_eq!(
        e,
        "scalar `alpha`: 2147483648 out of range for i32 [-2147483648, 2147483647]"
    );
    let e = msg(bind::bind(
        &s,
        &ts,
        &one(ScalarValue::Float(1.5)),
        132,
        None,
    ));
    assert_eq!(e, "scalar `alpha`: expected an int for i32, got 1.5");
    assert!(msg(bind::bind(
        &s,
        &ts,
        &one(ScalarValue::Bool(false)),
        132,
        None
    ))
    .contains("expected an int for i32, got False"));
}

// ---- tensor maps ---------------------------------------------------------------------------

fn tmap(
    m_: i64,
    k: i64,
    ptr: u64,
    bx: [u32; 2],
    swizzle: u32,
) -> Result<cake_runtime::tensormap::TensorMapFields, Error> {
    let mut m = gemm_meta();
    m["args"][0]["box"] = json!(bx);
    m["args"][0]["swizzle"] = json!(swizzle);
    let s = spec(&m)?;
    let t = bind::BoundTensor {
        name: "A".into(),
        dtype: dtype::lookup("bf16").unwrap(),
        shape: vec![m_ as u64, k as u64],
        data_ptr: ptr,
    };
    let ArgKind::TensorMap(tma) = &s.args[0].kind else {
        panic!()
    };
    cake_runtime::tensormap::fields(&s.args[0], tma, &t)
}

#[test]
fn tensormap_fields_bf16_mk() {
    let f = tmap(4096, 1024, 0x10 * GIB, [64, 128], 128).unwrap();
    assert_eq!(f.data_type, 9);
    assert_eq!(f.rank, 2);
    assert_eq!(f.global_address, 0x10 * GIB);
    assert_eq!(f.global_dim, [1024, 4096]); // innermost first: [K, M]
    assert_eq!(f.global_strides, [2048]); // K * 2 bytes
    assert_eq!(f.box_dim, [64, 128]);
    assert_eq!(f.element_strides, [1, 1]);
    assert_eq!(
        (f.interleave, f.swizzle, f.l2_promotion, f.oob_fill),
        (0, 3, 3, 0)
    );
}

#[test]
fn tensormap_rank3_strides() {
    let mut m = gemm_meta();
    m["tensors"][0]["dims"] = json!(["Bt", "M", "K"]);
    m["tensors"][1]["dims"] = json!(["Bt", "N", "K"]);
    m["tensors"][2]["dims"] = json!(["Bt", "M", "N"]);
    m["args"][0]["box"] = json!([64, 128, 1]);
    m["args"][1]["box"] = json!([64, 256, 1]);
    let s = spec(&m).unwrap();
    let ts = vec![
        tensor("A", &[3, 100, 64], "bf16", 0x1000),
        tensor("B", &[3, 256, 64], "bf16", 0x10 * GIB),
        tensor("C", &[3, 100, 256], "bf16", 0x20 * GIB),
    ];
    let b = bind::bind(&s, &ts, &alpha(1.0), 132, None).unwrap();
    let plan = pack::plan(&s, &b).unwrap();
    let Planned::TensorMap(f) = &plan[0] else {
        panic!()
    };
    assert_eq!(f.global_dim, [64, 100, 3]);
    assert_eq!(f.global_strides, [128, 100 * 128]);
}

#[test]
fn tensormap_box_and_alignment_rules() {
    assert!(msg(tmap(4096, 1024, 0x10 * GIB, [64, 128], 64)).contains("<= 64 bytes"));
    assert!(tmap(4096, 1024, 0x10 * GIB, [128, 128], 0).is_ok()); // fine without swizzle
    assert!(msg(tmap(4096, 1024, 0x10 * GIB + 2, [64, 128], 128))
        .contains("globalAddress must be 16-byte aligned"));
    let e = msg(tmap(4096, 100, 0x10 * GIB, [64, 128], 128)); // 100 * 2 = 200 bytes
    assert!(
        e.contains(
            "globalStrides[0] (stride of tensor dim 0) must be a multiple of 16 bytes, got 200"
        ),
        "{e}"
    );
    assert!(tmap(4096, 104, 0x10 * GIB, [64, 128], 128).is_ok()); // 208 bytes: fine
    assert!(msg(tmap(0, 64, 0x10 * GIB, [64, 128], 128))
        .contains("globalDim[1] (tensor dim 0) must be in [1, 2^32], got 0"));
    assert!(msg(tmap(1, 1 << 33, 0x10 * GIB, [64, 128], 128))
        .contains("globalDim[0] (tensor dim 1) must be in [1, 2^32], got 8589934592"));
}

#[test]
fn tma_alignment_error_names_the_tensor_at_bind() {
    // K = 100 bf16 is a 200-byte row pitch: rejected before launch, naming the tensor.
    let s = spec(&gemm_meta()).unwrap();
    let b = bind::bind(&s, &gemm_tensors(256, 256, 100), &alpha(1.0), 132, None).unwrap();
    let e = msg(pack::plan(&s, &b));
    assert!(
        e.starts_with("arg 0 (tensormap `A`) for tensor `A`: globalStrides[0]"),
        "{e}"
    );
}

// ---- packing -------------------------------------------------------------------------------

#[test]
fn pack_args_order_sizes_and_bytes() {
    let s = spec(&gemm_meta()).unwrap();
    let ts = gemm_tensors(1000, 1000, 512);
    let b = bind::bind(&s, &ts, &alpha(0.5), 132, None).unwrap();
    let plan = pack::plan(&s, &b).unwrap();
    let sizes: Vec<usize> = plan.iter().map(Planned::size).collect();
    assert_eq!(sizes, [128, 128, 8, 4, 4, 4, 4]);
    let mut encoded = Vec::new();
    let packed = Packed::new(&plan, |f, slot| {
        encoded.push(f.global_dim.clone());
        slot.0[..8].copy_from_slice(&f.global_address.to_le_bytes()); // mark the tensor
        Ok(())
    })
    .unwrap();
    assert_eq!(encoded, [vec![512, 1000], vec![512, 1000]]);
    assert_eq!(packed.len(), 7);
    assert_eq!(packed.bytes(0)[..8], (0x10 * GIB).to_le_bytes());
    assert_eq!(packed.bytes(1)[..8], (0x20 * GIB).to_le_bytes());
    assert_eq!(packed.bytes(2), (0x30 * GIB).to_le_bytes());
    assert_eq!(packed.bytes(3), 1000i32.to_le_bytes()); // M, N, K as in args
    assert_eq!(packed.bytes(4), 1000i32.to_le_bytes());
    assert_eq!(packed.bytes(5), 512i32.to_le_bytes());
    assert_eq!(packed.bytes(6), 0.5f32.to_le_bytes());
    for i in 0..packed.len() {
        assert_eq!(packed.address(i) % 128, 0, "slot {i} is 128-byte aligned");
        assert_eq!(packed.address(i), packed.bytes(i).as_ptr() as usize);
    }
}

#[test]
fn encoder_errors_stop_packing() {
    let s = spec(&gemm_meta()).unwrap();
    let b = bind::bind(&s, &gemm_tensors(256, 256, 64), &alpha(1.0), 132, None).unwrap();
    let plan = pack::plan(&s, &b).unwrap();
    let r = Packed::new(&plan, |_, _| Err(Error::Launch("no".into())));
    assert!(matches!(r, Err(Error::Launch(m)) if m == "no"));
}

#[test]
fn scalar_bits_for_every_dtype() {
    let cases: [(&str, ScalarValue, u64, usize); 12] = [
        ("i8", ScalarValue::Int(-3), 0xfd, 1),
        ("u8", ScalarValue::Int(200), 200, 1),
        ("i16", ScalarValue::Int(-300), (-300i16) as u16 as u64, 2),
        ("u16", ScalarValue::Int(60000), 60000, 2),
        ("i32", ScalarValue::Int(-5), (-5i32) as u32 as u64, 4),
        ("u32", ScalarValue::Int(1 << 31), 1 << 31, 4),
        (
            "i64",
            ScalarValue::Int(-(1 << 40)),
            (-(1i64 << 40)) as u64,
            8,
        ),
        ("u64", ScalarValue::Int(1 << 63), 1 << 63, 8),
        (
            "f32",
            ScalarValue::Float(1.5),
            u64::from(1.5f32.to_bits()),
            4,
        ),
        ("f64", ScalarValue::Float(1.5), 1.5f64.to_bits(), 8),
        ("f16", ScalarValue::Float(1.0), 0x3c00, 2),
        ("bf16", ScalarValue::Float(-2.0), 0xc000, 2),
    ];
    for (dt, v, bits, size) in cases {
        let mut m = gemm_meta();
        m["scalars"][0]["dtype"] = json!(dt);
        let s = spec(&m).unwrap();
        let b = bind::bind(
            &s,
            &gemm_tensors(256, 256, 64),
            &[("alpha".into(), v)],
            132,
            None,
        )
        .unwrap();
        let sb = b.scalar("alpha").unwrap();
        assert_eq!((sb.bits, sb.size), (bits, size), "{dt}");
    }
    let mut m = gemm_meta();
    m["scalars"][0]["dtype"] = json!("u8");
    let s = spec(&m).unwrap();
    let e = msg(bind::bind(
        &s,
        &gemm_tensors(256, 256, 64),
        &[("alpha".into(), ScalarValue::Int(-1))],
        132,
        None,
    ));
    assert!(e.contains("-1 out of range for u8 [0, 255]"), "{e}");
}

#[test]
fn half_and_bfloat16_rounding() {
    assert_eq!(f64_to_f16_bits(1.0), Some(0x3c00));
    assert_eq!(f64_to_f16_bits(-2.0), Some(0xc000));
    assert_eq!(f64_to_f16_bits(65504.0), Some(0x7bff));
    assert_eq!(f64_to_f16_bits(65519.0), Some(0x7bff));
    assert_eq!(f64_to_f16_bits(65520.0), None);
    assert_eq!(f64_to_f16_bits(f64::INFINITY), Some(0x7c00));
    assert_eq!(f64_to_f16_bits(2f64.powi(-24)), Some(0x0001)); // smallest subnormal
    assert_eq!(f64_to_f16_bits(2f64.powi(-14)), Some(0x0400)); // smallest normal
    assert_eq!(f64_to_f16_bits(1.0 + 2f64.powi(-11)), Some(0x3c00)); // tie: to even
    assert_eq!(f64_to_f16_bits(1.0 + 3.0 * 2f64.powi(-11)), Some(0x3c02));
    assert_eq!(f64_to_f16_bits(0.1), Some(0x2e66));
    assert_eq!(f64_to_f16_bits(-0.0), Some(0x8000));
    assert_eq!(f32_to_bf16_bits(1.0), 0x3f80);
    assert_eq!(f32_to_bf16_bits(-2.0), 0xc000);
    assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3f80_8000)), 0x3f80); // tie: to even
    assert_eq!(f32_to_bf16_bits(f32::from_bits(0x3f81_8000)), 0x3f82);
    assert_eq!(f32_to_bf16_bits(f32::NAN) & 0x7fc0, 0x7fc0);
}

#[test]
fn pack_dim_overflows_int32() {
    let s = spec(&gemm_meta()).unwrap();
    let b = bind::bind(&s, &gemm_tensors(1 << 31, 8, 8), &alpha(1.0), 132, None).unwrap();
    // Rejected by the int32 dim argument (the tensor maps would accept 2^31 rows).
    let e = msg(pack::plan(&s, &b));
    assert!(
        e.contains("arg 3 (dim `M`): dim `M` = 2147483648 does not fit the int32 kernel parameter"),
        "{e}"
    );
}

// ---- loading -------------------------------------------------------------------------------

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("cake-runtime-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn load_reads_json_and_cubin() {
    let d = temp_dir("load");
    std::fs::write(d.join("gemm.launch.json"), gemm_meta().to_string()).unwrap();
    std::fs::write(d.join("gemm.cubin"), b"\x7fELF fake").unwrap();
    let k = Kernel::load(&d.join("gemm.launch.json")).unwrap();
    assert_eq!(k.spec().meta.symbol, "cake_gemm");
    let k = Kernel::load(&d).unwrap(); // a directory with one launch.json
    assert_eq!(k.spec().kernel(), "gemm");
    // Binding needs no driver when the SM count is given.
    let b = k
        .bind(&gemm_tensors(1000, 1000, 512), &alpha(1.0), Some(132), None)
        .unwrap();
    assert_eq!(b.bound.grid, [32, 1, 1]);
    assert_eq!(b.plan.as_ref().map(Vec::len), Some(7));
    let empty = k
        .bind(&gemm_tensors(0, 1000, 512), &alpha(1.0), Some(132), None)
        .unwrap();
    assert!(empty.bound.is_empty() && empty.plan.is_none());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn load_errors() {
    let d = temp_dir("load-errors");
    let p = d.join("gemm.launch.json");
    std::fs::write(&p, gemm_meta().to_string()).unwrap();
    assert!(msg(Kernel::load(&p)).contains("field `cubin`: cannot read"));
    std::fs::write(d.join("gemm.cubin"), b"").unwrap();
    assert!(msg(Kernel::load(&p)).contains("is not a cubin (ELF) or fatbin"));
    // PTX text would be read by the driver as a NUL-terminated string, past the buffer.
    std::fs::write(d.join("gemm.cubin"), b".version 8.0\n.target sm_90a").unwrap();
    assert!(msg(Kernel::load(&p)).contains("is not a cubin (ELF) or fatbin"));
    std::fs::write(&p, "{not json").unwrap();
    assert!(msg(Kernel::load(&p)).contains("invalid JSON"));
    std::fs::write(d.join("other.launch.json"), "{}").unwrap();
    assert!(msg(Kernel::load(&d)).contains("expected exactly one *.launch.json"));
    assert!(msg(Kernel::load(&d.join("missing.launch.json"))).contains("cannot read"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn without_a_driver_launching_is_a_cuda_error_not_a_panic() {
    // SAFETY: only probes for the library.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        // CI has no driver, so there it always runs.
        cake_testkit::skip("needs a machine without a CUDA driver: one is present");
        return;
    }
    let d = temp_dir("nodriver");
    std::fs::write(d.join("gemm.launch.json"), gemm_meta().to_string()).unwrap();
    std::fs::write(d.join("gemm.cubin"), b"\x7fELF fake").unwrap();
    let k = Kernel::load(&d).unwrap();
    // Validation errors still come first.
    let mut bad = gemm_tensors(256, 256, 64);
    bad[0].dtype = "f16".into();
    assert!(matches!(
        k.launch(&bad, &alpha(1.0), 0, Some(0)),
        Err(Error::Launch(_))
    ));
    match k.launch(&gemm_tensors(256, 256, 64), &alpha(1.0), 0, Some(0)) {
        Err(Error::Cuda(c)) => assert_eq!(c.name, "CUDA_ERROR_NO_DRIVER_LIBRARY"),
        other => panic!("expected a CUDA error, got {:?}", other.map(|_| ())),
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn cluster_tile_rule_counts_whole_clusters() {
    // The lowering's rule for a cluster of 2 (tests/golden/cu/gemm_cluster_sm90...launch.json):
    // the CTAs of a cluster take neighbouring M tiles, so the M tile count rounds up to 2.
    let mut m = gemm_meta();
    m["cluster"] = json!([2, 1, 1]);
    m["grid"] = json!({"kind": "tiles", "tiles": [["mul", ["cdiv", ["cdiv", "M", 128], 2], 2], ["cdiv", "N", 256]]});
    // 7 M tiles (777 rows) -> 8, times 4 N tiles.
    let b = bind_with(&m, &gemm_tensors(777, 1000, 64), 132).unwrap();
    assert_eq!(b.grid, [32, 1, 1]);
    // Persistent: whole clusters within the SMs given (the launch path caps it again by the
    // clusters that fit at once).
    m["grid"]["kind"] = json!("persistent");
    let b = bind_with(&m, &gemm_tensors(4096, 7168, 64), 131).unwrap();
    assert_eq!(b.grid, [130, 1, 1]);
    let b = bind_with(&m, &gemm_tensors(4096, 7168, 64), 1).unwrap();
    assert_eq!(b.grid, [2, 1, 1]);
}

#[test]
fn a_workspace_is_one_state_argument_sized_by_launch_json() {
    use cake_runtime::spec::ArgKind;
    let plain = spec(&gemm_meta()).unwrap();
    assert!(plain.meta.state.is_none(), "absent: no workspace");
    let mut m = gemm_meta();
    m["state"] = json!({"bytes": 4096, "zeroed": 8});
    m["args"]
        .as_array_mut()
        .unwrap()
        .push(json!({"kind": "state"}));
    let stateful = spec(&m).unwrap();
    assert_eq!(stateful.args.last().unwrap().kind, ArgKind::State);
    assert_eq!(
        stateful.args.last().unwrap().label(),
        format!("arg {} (state `state`)", stateful.args.len() - 1)
    );
    // The size must be sensible and the argument present exactly once.
    let mut bad = m.clone();
    bad["state"] = json!({"bytes": 8, "zeroed": 16});
    assert!(
        msg(spec(&bad)).contains("at most all are zeroed"),
        "{}",
        msg(spec(&bad))
    );
    bad["state"] = json!({"bytes": 0, "zeroed": 0});
    assert!(msg(spec(&bad)).contains("expected 1 to"));
    bad["state"] = json!({"bytes": 2u64 << 30, "zeroed": 0});
    assert!(msg(spec(&bad)).contains("expected 1 to"));
    let mut twice = m.clone();
    twice["args"]
        .as_array_mut()
        .unwrap()
        .push(json!({"kind": "state"}));
    assert!(
        msg(spec(&twice)).contains("exactly one argument"),
        "{}",
        msg(spec(&twice))
    );
    let mut missing = gemm_meta();
    missing["state"] = json!({"bytes": 4096, "zeroed": 8});
    assert!(msg(spec(&missing)).contains("found 0"));
    let mut unsized_ = gemm_meta();
    unsized_["args"]
        .as_array_mut()
        .unwrap()
        .push(json!({"kind": "state"}));
    assert!(msg(spec(&unsized_)).contains("no `state` to size it"));
    m["state"] = json!(true);
    assert!(msg(spec(&m)).contains("expected struct StateMeta"));
    // A kernel an older Cake built keeps its state in module globals: one module per device
    // would share it between streams, so it is refused with what to do.
    let mut old = gemm_meta();
    old["module_state"] = json!(true);
    let text = serde_json::to_string(&old).unwrap();
    let e = msg(Spec::from_json(&text));
    assert!(
        e.contains("field `module_state`") && e.contains("rebuild it"),
        "{e}"
    );
}
