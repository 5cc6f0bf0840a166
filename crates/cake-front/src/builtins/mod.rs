//! Builtin handlers, grouped by job: declarations (`decl`), operations (`ops`), element-wise
//! math, reductions and Python builtins (`math`). A call reaches its handler through
//! [`Interp::call_builtin`], which first binds the arguments to the parameters the vocabulary
//! table lists, so a handler reads its arguments by position. Handlers use the interpreter only
//! through the interface of `interp` and the conversions of `typing`.

mod decl;
mod math;
mod ops;

use crate::args::{bind, CallArgs};
use crate::codes;
use crate::interp::{Interp, Reported, R};
use crate::value::Value;
use crate::vocab::{self, Builtin, Entry, Kind, Param};
use cake_diag::{Finding, Span};
use cake_ir::*;

/// One bound argument: its value and where it was written, or `None` when an optional
/// parameter was not given.
type Slot = Option<(Value, Span)>;

impl Interp<'_> {
    /// Calls builtin `b`; `recv` is the receiver when `b` is a method.
    pub fn call_builtin(&mut self, b: Builtin, recv: Option<Value>, args: CallArgs) -> R<Value> {
        use Builtin::*;
        let entry = vocab::entry(b);
        let sp = args.span;
        let params = match entry.kind {
            Kind::Call(params) => params,
            Kind::Custom(usage) => {
                return match b {
                    Tiles => self.tiles(args, usage),
                    _ => self.python_builtin(b, args),
                }
            }
            Kind::Decorator(_) => {
                let msg = format!("`{}` is a decorator", entry.display());
                return self.err(&codes::MISPLACED_OPERATION, sp, msg);
            }
            Kind::Read => unreachable!("{b:?} is read, not called"),
        };
        let a = &self.bind_args(entry, params, args)?[..];
        // The receiver of a method, of the kind its row names.
        macro_rules! recv {
            ($kind:ident) => {
                match recv {
                    Some(Value::$kind(r)) => r,
                    _ => unreachable!("{b:?} is bound to its receiver by attribute lookup"),
                }
            };
        }
        match b {
            Smem => self.smem(a, sp),
            Tmem => self.tmem(a, sp),
            RoleDecl => self.role_decl(a, sp),
            PipelineDecl => self.pipeline(a, sp),
            BarrierDecl => self.barrier(a, sp),
            NamedBarrierDecl => self.named_barrier(a, sp),
            LmRange => self.lm_range(a, sp),
            Ahead => self.ahead(a),
            PoolView => self.pool_view(recv!(Pool), a, sp),
            ViewRows => self.view_rows(recv!(View), a, sp),
            ViewStage => self.view_stage(recv!(View), a, sp),
            RoleFragment => self.role_fragment(recv!(Role), a, sp),
            TmemColumns => self.tmem_columns(recv!(Tmem), a, sp),
            TmemStage => self.tmem_stage(recv!(Tmem), a, sp),

            Wait | Arrive | Commit => self.barrier_op(b, a, sp),
            FenceProxyAsync => self.fence_proxy_async(a, sp),
            Sync => self.sync(a, sp),
            StreamFixup => self.stream_fixup(a, sp),
            Mma => self.mma(a, sp),
            Store => self.store(a, sp),
            ScatterAddGlobal => self.scatter_add_global(a, sp),
            Load => self.load(a, sp),
            Iota => self.iota(a, sp),
            Ldmatrix => self.ldmatrix(a, sp),
            TmemLoad => self.tmem_load(a, sp),
            TmemStore => self.tmem_store(a, sp),
            TmemCopy => self.tmem_copy(a, sp),
            ViewTmaLoad => self.tma_load(recv!(View), a, sp),
            ViewTmaStore => self.tma_store(recv!(View), a, sp),
            ViewCpAsync => self.cp_async(recv!(View), a, sp),
            ViewCopyTo => self.copy_to(recv!(View), a, sp),
            ViewStore => self.view_store(recv!(View), a, sp),
            ViewLoad => self.view_load(recv!(View), a, sp),
            ViewScatterAdd => self.scatter_add(recv!(View), a, sp),

            Cdiv => self.cdiv(a, sp),
            Cast => self.cast(a, sp),
            Select => self.select_call(a, sp),
            Maximum | Minimum => self.min_max(b, a, sp),
            Exp2 | Log2 | Sqrt | Rsqrt | Abs => self.unary_math(b, a, sp),
            Sum | Max | Min | ArgMin | ArgMax => self.reduce(b, a, sp),
            Any | All => self.vote(b, a, sp),

            // Rows without a parameter list, handled above.
            Range | Len | PyMin | PyMax | Tiles | Schedule | LmModule | Inf | TensorAnnotation
            | ViewT | ViewShape | ViewDType | PipelineStage | RoleIndex | RoleSize | FragShape
            | FragDType | TensorShape | TensorDType => {
                unreachable!("{b:?} takes no parameter list")
            }
        }
    }

    fn bind_args(&mut self, entry: &Entry, params: &[Param<'_>], args: CallArgs) -> R<Vec<Slot>> {
        bind(&entry.display(), params, args).map_err(|e| {
            let mut f = Finding::new(&codes::BAD_ARGUMENTS, e.span, e.message);
            if let Some(h) = e.help {
                f = f.help(h);
            }
            self.report(f)
        })
    }

    fn opt_int(&mut self, slot: &Slot, what: &str) -> R<Option<i64>> {
        match slot {
            None | Some((Value::None, _)) => Ok(None),
            Some((v, s)) => self.const_int(v, *s, what).map(Some),
        }
    }

    fn positive(&mut self, slot: &Slot, what: &str, default: Option<i64>) -> R<u32> {
        let v = self.opt_int(slot, what)?;
        let span = slot.as_ref().map_or(Span::default(), |s| s.1);
        match v.or(default) {
            // The generated code holds counts in 32-bit `int`.
            Some(n) if n >= 1 && n <= i32::MAX as i64 => Ok(n as u32),
            Some(n) if n >= 1 => self.err(
                &codes::INVALID_VALUE,
                span,
                format!("{what} must be at most {}, got {n}", i32::MAX),
            ),
            Some(n) => self.err(
                &codes::INVALID_VALUE,
                span,
                format!("{what} must be a positive integer, got {n}"),
            ),
            None => self.err(&codes::BAD_ARGUMENTS, span, format!("{what} is required")),
        }
    }

    fn shape(&mut self, slot: &Slot, what: &str) -> R<Vec<u32>> {
        let Some((v, s)) = slot else {
            unreachable!("required argument")
        };
        let items = match v {
            Value::Tuple(items) => items.clone(),
            Value::Int(_) => vec![v.clone()],
            Value::Poison => return Err(Reported),
            other => {
                let msg = format!(
                    "{what} must be a tuple of integers, found {}",
                    other.kind_name()
                );
                return self.err(&codes::TYPE_MISMATCH, *s, msg);
            }
        };
        let mut out = Vec::new();
        for item in items {
            let n = self.const_int(&item, *s, what)?;
            if !(1..=1 << 20).contains(&n) {
                return self.err(
                    &codes::INVALID_VALUE,
                    *s,
                    format!("every extent of {what} must be in 1..=1048576, got {n}"),
                );
            }
            out.push(n as u32);
        }
        if out.is_empty() {
            return self.err(
                &codes::INVALID_VALUE,
                *s,
                format!("{what} must have at least one extent"),
            );
        }
        // Element counts are computed in 32-bit `int` by the generated code, and in `u32` and
        // `u64` products by the stages before it.
        let elements = out
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64));
        if elements.is_none_or(|n| n > i32::MAX as u64) {
            let dims: Vec<String> = out.iter().map(|d| d.to_string()).collect();
            return self.err(
                &codes::INVALID_VALUE,
                *s,
                format!(
                    "{what} ({}) has more than {} elements",
                    dims.join(" x "),
                    i32::MAX
                ),
            );
        }
        Ok(out)
    }

    fn dtype(&mut self, slot: &Slot, what: &str) -> R<DType> {
        match slot {
            Some((Value::DType(d), _)) => Ok(*d),
            Some((Value::Poison, _)) => Err(Reported),
            Some((other, s)) => {
                let msg = format!(
                    "{what} must be a dtype such as lm.bf16, found {}",
                    other.kind_name()
                );
                self.err(&codes::TYPE_MISMATCH, *s, msg)
            }
            None => unreachable!("required argument"),
        }
    }

    fn roles(&mut self, slot: &Slot, what: &str) -> R<Vec<RoleId>> {
        let Some((v, s)) = slot else {
            return Ok(Vec::new());
        };
        let items = match v {
            Value::Tuple(items) => items.clone(),
            Value::Role(_) => vec![v.clone()],
            Value::Poison => return Err(Reported),
            other => {
                let msg = format!(
                    "{what} must be a list of roles, found {}",
                    other.kind_name()
                );
                return self.err(&codes::TYPE_MISMATCH, *s, msg);
            }
        };
        let mut out = Vec::new();
        if items.iter().any(|v| matches!(v, Value::Poison)) {
            return Err(Reported);
        }
        for item in items {
            match item {
                Value::Role(r) => out.push(r),
                other => {
                    let msg = format!("{what} must contain roles, found {}", other.kind_name());
                    return self.err(&codes::TYPE_MISMATCH, *s, msg);
                }
            }
        }
        Ok(out)
    }

    fn barrier_arg(&mut self, slot: &Slot, what: &str) -> R<BarrierId> {
        match slot {
            Some((Value::Barrier(b), _)) => Ok(*b),
            Some((Value::Poison, _)) => Err(Reported),
            Some((other, s)) => {
                let msg = format!("{what} must be a barrier, found {}", other.kind_name());
                self.err(&codes::TYPE_MISMATCH, *s, msg)
            }
            None => unreachable!("required argument"),
        }
    }

    fn tensor_arg(&mut self, slot: &Slot, what: &str) -> R<ParamId> {
        match slot {
            Some((Value::Tensor(p), _)) => Ok(*p),
            Some((Value::Poison, _)) => Err(Reported),
            Some((other, s)) => {
                let msg = format!(
                    "{what} must be a tensor parameter, found {}",
                    other.kind_name()
                );
                self.err(&codes::TYPE_MISMATCH, *s, msg)
            }
            None => unreachable!("required argument"),
        }
    }

    fn view_arg(&mut self, slot: &Slot, what: &str) -> R<ViewRef> {
        match slot {
            Some((Value::View(v), _)) => Ok(v.clone()),
            Some((Value::Poison, _)) => Err(Reported),
            Some((other, s)) => {
                let msg = format!(
                    "{what} must be a shared-memory view, found {}",
                    other.kind_name()
                );
                self.err(&codes::TYPE_MISMATCH, *s, msg)
            }
            None => unreachable!("required argument"),
        }
    }

    fn frag_arg(&mut self, slot: &Slot, what: &str) -> R<FragId> {
        match slot {
            Some((Value::Frag(f), _)) => Ok(*f),
            Some((Value::Poison, _)) => Err(Reported),
            Some((other, s)) => {
                let msg = format!("{what} must be a fragment, found {}", other.kind_name());
                self.err(&codes::TYPE_MISMATCH, *s, msg)
            }
            None => unreachable!("required argument"),
        }
    }

    /// A whole TMEM region (or one stage of it).
    fn tmem_arg(&mut self, slot: &Slot, what: &str) -> R<TmemRef> {
        match slot {
            Some((Value::Tmem(t), s)) if t.cols.is_some() => self.err(
                &codes::TYPE_MISMATCH,
                *s,
                format!("{what} must be a whole TMEM region: a column range (`.cols(...)`) is read by lm.tmem_load and written by lm.tmem_store only"),
            ),
            _ => self.tmem_cols_arg(slot, what),
        }
    }

    /// A TMEM region, one stage of it, or a column range (`region.cols(start, count)`).
    fn tmem_cols_arg(&mut self, slot: &Slot, what: &str) -> R<TmemRef> {
        match slot {
            Some((Value::Tmem(t), _)) => Ok(t.clone()),
            Some((Value::Poison, _)) => Err(Reported),
            Some((other, s)) => {
                let msg = format!("{what} must be a TMEM region, found {}", other.kind_name());
                self.err(&codes::TYPE_MISMATCH, *s, msg)
            }
            None => unreachable!("required argument"),
        }
    }

    /// Coordinates into `tensor`: one integer index per dimension.
    fn coords(&mut self, slot: &Slot, tensor: ParamId, what: &str) -> R<Vec<ExprId>> {
        let Some((v, s)) = slot else {
            unreachable!("required argument")
        };
        let items = match v {
            Value::Tuple(items) => items.clone(),
            other => vec![other.clone()],
        };
        let rank = self.tensor_rank(tensor);
        if items.len() != rank {
            let name = self.k.params[tensor].name.clone();
            let f = Finding::new(
                &codes::SHAPE_MISMATCH,
                *s,
                format!(
                    "{what} has {} coordinates but `{name}` has {rank} dimensions",
                    items.len()
                ),
            )
            .expected(rank)
            .actual(items.len());
            return Err(self.report(f));
        }
        let mut out = Vec::new();
        for item in items {
            out.push(self.index_of(item, *s)?);
        }
        Ok(out)
    }

    fn tensor_rank(&self, p: ParamId) -> usize {
        match &self.k.params[p].kind {
            ParamKind::Tensor { dims, .. } => dims.len(),
            ParamKind::Scalar { .. } => 0,
        }
    }

    fn tensor_dtype(&self, p: ParamId) -> DType {
        match &self.k.params[p].kind {
            ParamKind::Tensor { dtype, .. } | ParamKind::Scalar { dtype } => *dtype,
        }
    }
}
