//! Declaration handlers: resources (`lm.smem`, `pool.view`, `lm.tmem`, `lm.role`,
//! `role.fragment`, `lm.pipeline`, `lm.barrier`, `lm.named_barrier`), views of them, and the
//! loop iterators (`lm.tiles`, `lm.range`).

use super::Slot;
use crate::args::CallArgs;
use crate::codes;
use crate::interp::{Interp, Reported, R};
use crate::value::{TilesArgs, Value};
use cake_diag::{Finding, Span};
use cake_ir::*;

impl Interp<'_> {
    /// `lm.smem(size=None)`
    pub(super) fn smem(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let size = self.opt_int(&a[0], "pool size")?;
        if let Some(s) = size {
            if !(1..=1 << 24).contains(&s) {
                return self.err(
                    &codes::INVALID_VALUE,
                    a[0].as_ref().map_or(sp, |x| x.1),
                    format!("pool size {s} is out of range"),
                );
            }
        }
        let name = self.take_name("pool");
        let id = self.k.pools.push(
            Pool {
                name,
                size: size.map(|s| s as u32),
            },
            sp,
        );
        Ok(Value::Pool(id))
    }

    /// `lm.tmem(cols, shape, dtype, lanes=128, stages=1)`
    pub(super) fn tmem(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let cols = self.positive(&a[0], "cols", None)?;
        let shape = self.shape(&a[1], "shape")?;
        let dtype = self.dtype(&a[2], "dtype")?;
        let lanes = self.positive(&a[3], "lanes", Some(128))?;
        let stages = self.positive(&a[4], "stages", Some(1))?;
        let name = self.take_name("tmem");
        let region = self.k.tmems.push(
            cake_ir::Tmem {
                name,
                cols,
                lanes,
                dtype,
                shape,
                stages,
            },
            sp,
        );
        Ok(Value::Tmem(TmemRef::whole(region)))
    }

    /// `lm.pipeline(stages)`
    pub(super) fn pipeline(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let stages = self.positive(&a[0], "stages", None)?;
        let name = self.take_name("pipeline");
        Ok(Value::Pipeline(
            self.k.pipelines.push(Pipeline { name, stages }, sp),
        ))
    }

    /// `lm.barrier(pipeline, producers, consumers, count=None, cluster=False)`
    pub(super) fn barrier(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let pipeline = match &a[0] {
            None | Some((Value::None, _)) => None,
            Some((Value::Pipeline(p), _)) => Some(*p),
            Some((Value::Poison, _)) => return Err(Reported),
            Some((other, s)) => {
                let msg = format!(
                    "the first argument of lm.barrier is a pipeline, found {}",
                    other.kind_name()
                );
                return self.err(&codes::TYPE_MISMATCH, *s, msg);
            }
        };
        let producers = self.roles(&a[1], "producers")?;
        let consumers = self.roles(&a[2], "consumers")?;
        let count = match self.opt_int(&a[3], "count")? {
            None => None,
            Some(c) if (1..1 << 20).contains(&c) => Some(c as u32),
            Some(c) => {
                let s = a[3].as_ref().map_or(sp, |x| x.1);
                return self.err(
                    &codes::INVALID_VALUE,
                    s,
                    format!("an mbarrier count must be in 1..=1048575, got {c}"),
                );
            }
        };
        let cluster = match &a[4] {
            None => false,
            Some((Value::Bool(c), _)) => *c,
            Some((_, csp)) => {
                return self.err(
                    &codes::TYPE_MISMATCH,
                    *csp,
                    "`cluster` is a compile-time bool (True or False)",
                )
            }
        };
        let name = self.take_name("barrier");
        let id = self.k.barriers.push(
            Barrier {
                name,
                pipeline,
                producers,
                consumers,
                count,
                cluster,
            },
            sp,
        );
        Ok(Value::Barrier(id))
    }

    /// `lm.named_barrier(roles)`
    pub(super) fn named_barrier(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let roles = self.roles(&a[0], "roles")?;
        let name = self.take_name("named_barrier");
        Ok(Value::NamedBarrier(
            self.k.named_barriers.push(NamedBarrier { name, roles }, sp),
        ))
    }

    /// `lm.tiles(count0, ..., group=G, stream=KB, dynamic=False)`: variadic, so it checks its
    /// own arguments.
    pub(super) fn tiles(&mut self, args: CallArgs, usage: &str) -> R<Value> {
        let sp = args.span;
        let mut group = None;
        let mut stream = None;
        let mut dynamic = None;
        for (name, v, s) in &args.keywords {
            match name.as_str() {
                "group" => {
                    let g = self.const_int(v, *s, "group")?;
                    if !(1..=65535).contains(&g) {
                        return self.err(
                            &codes::INVALID_VALUE,
                            *s,
                            format!("group must be in 1..=65535, got {g}"),
                        );
                    }
                    if args.positional.len() != 2 {
                        return self.err(
                            &codes::BAD_ARGUMENTS,
                            *s,
                            "group= applies to two-axis tile loops",
                        );
                    }
                    group = Some(g as u32);
                }
                "stream" => stream = Some((v.clone(), *s)),
                "dynamic" => match v {
                    Value::Bool(true) => dynamic = Some(*s),
                    Value::Bool(false) => dynamic = None,
                    _ => {
                        return self.err(
                            &codes::TYPE_MISMATCH,
                            *s,
                            "`dynamic` is a compile-time bool (True or False)",
                        )
                    }
                },
                _ => {
                    return self
                        .err(
                            &codes::BAD_ARGUMENTS,
                            *s,
                            format!("`lm.tiles` has no parameter `{name}`"),
                        )
                        .map_err(|r| self.help_last(r, usage));
                }
            }
        }
        if args.positional.is_empty() || args.positional.len() > 3 {
            return self.err(
                &codes::BAD_ARGUMENTS,
                sp,
                "`lm.tiles` takes 1 to 3 tile counts",
            );
        }
        Ok(Value::TilesIter(Box::new(TilesArgs {
            counts: args.positional.into_iter().map(|(v, _)| v).collect(),
            group,
            stream,
            dynamic,
        })))
    }

    /// `lm.range(start_or_stop, stop=None, pipeline=None)`
    pub(super) fn lm_range(&mut self, a: &[Slot], _sp: Span) -> R<Value> {
        let first = a[0].clone().expect("required");
        let (start, stop) = match &a[1] {
            Some((v, _)) => (first.0, v.clone()),
            None => (Value::Int(0), first.0),
        };
        let pipeline = match &a[2] {
            None | Some((Value::None, _)) => None,
            Some((Value::Pipeline(p), _)) => Some(*p),
            Some((other, s)) => {
                let msg = format!("`pipeline=` takes a pipeline, found {}", other.kind_name());
                return self.err(&codes::TYPE_MISMATCH, *s, msg);
            }
        };
        Ok(Value::RangeIter {
            start: Box::new(start),
            stop: Box::new(stop),
            pipeline,
        })
    }

    /// `lm.ahead(steps)`: how many iterations early a `with lm.ahead(...)` region is issued.
    pub(super) fn ahead(&mut self, a: &[Slot]) -> R<Value> {
        let (v, s) = a[0].clone().expect("required");
        match self.const_int(&v, s, "steps")? {
            n if (0..=i32::MAX as i64).contains(&n) => Ok(Value::Ahead(n as u32)),
            n => self.err(
                &codes::INVALID_VALUE,
                s,
                format!("`lm.ahead` takes a number of iterations, 0 or more, got {n}"),
            ),
        }
    }

    /// `pool.view(shape, dtype, stages=1, swizzle=0, offset=None)`
    pub(super) fn pool_view(&mut self, pool: PoolId, a: &[Slot], sp: Span) -> R<Value> {
        let shape = self.shape(&a[0], "shape")?;
        let dtype = self.dtype(&a[1], "dtype")?;
        let stages = self.positive(&a[2], "stages", Some(1))?;
        let swizzle = self.opt_int(&a[3], "swizzle")?.unwrap_or(0);
        if ![0, 32, 64, 128].contains(&swizzle) {
            let s = a[3].as_ref().map_or(sp, |x| x.1);
            return self.err(
                &codes::INVALID_VALUE,
                s,
                format!("swizzle must be 0, 32, 64 or 128 (bytes), got {swizzle}"),
            );
        }
        let offset = match self.opt_int(&a[4], "offset")? {
            None => None,
            Some(o) if (0..1 << 24).contains(&o) => Some(o as u32),
            Some(o) => {
                let s = a[4].as_ref().map_or(sp, |x| x.1);
                return self.err(
                    &codes::INVALID_VALUE,
                    s,
                    format!("offset {o} is out of range"),
                );
            }
        };
        let mut view = View {
            name: String::new(),
            pool,
            offset,
            shape,
            dtype,
            stages,
            swizzle: swizzle as u32,
        };
        // A swizzled row wider than the span is stored as whole panels of span width: a last
        // panel only partly filled would leave the copies into it (a TMA box of a whole panel)
        // writing past the view, and their byte counts wrong.
        let (cols, panel) = (view.shape.last().copied().unwrap_or(1), view.panel_cols());
        if view.panels() > 1 && cols % panel != 0 {
            let s = a[3].as_ref().map_or(sp, |x| x.1);
            let narrower: Vec<String> = [64u32, 32]
                .into_iter()
                .filter(|w| *w < swizzle as u32 && cols % (w / dtype.bytes()).max(1) == 0)
                .map(|w| format!("swizzle={w}"))
                .collect();
            let f = Finding::new(
                &codes::INVALID_VALUE,
                s,
                format!(
                    "with swizzle={swizzle} a row of {cols} {dtype} is stored as panels of {panel} columns, and {cols} is not a whole number of panels"
                ),
            )
            .expected(format!("a multiple of {panel} columns"))
            .actual(cols)
            .help(if narrower.is_empty() {
                format!("make the row a multiple of {panel} columns")
            } else {
                format!("use {} (narrower panels), or make the row a multiple of {panel} columns", narrower.join(" or "))
            });
            return Err(self.report(f));
        }
        // Placement and the generated code compute offsets from the size: it must not wrap,
        // and must fit the 32-bit `int` offsets of the generated code.
        if view
            .checked_total_bytes()
            .is_none_or(|b| b > i32::MAX as u64)
        {
            let s = a[0].as_ref().map_or(sp, |x| x.1);
            let dims: Vec<String> = view.shape.iter().map(|d| d.to_string()).collect();
            return self.err(
                &codes::INVALID_VALUE,
                s,
                format!(
                    "this view ({} x {} x {stages} stages) is more than {} bytes",
                    dims.join(" x "),
                    dtype,
                    i32::MAX
                ),
            );
        }
        view.name = self.take_name("view");
        let id = self.k.views.push(view, sp);
        Ok(Value::View(ViewRef {
            view: id,
            rows: None,
            transposed: false,
            stage: None,
        }))
    }

    /// `view.rows(start, count)`
    pub(super) fn view_rows(&mut self, v: ViewRef, a: &[Slot], sp: Span) -> R<Value> {
        let (start, ssp) = a[0].clone().expect("required");
        let start = self.index_of(start, ssp)?;
        let (cnt, csp) = a[1].clone().expect("required");
        let count = self.const_int(&cnt, csp, "the row count")?;
        let rows = self.view_ref_shape(&ViewRef {
            rows: None,
            transposed: false,
            ..v.clone()
        })[0] as i64;
        if v.rows.is_some() || v.transposed {
            return self.err(
                &codes::UNSUPPORTED_PYTHON,
                sp,
                "take `.rows(...)` of the view itself, before `.T`",
            );
        }
        if count < 1 || count > rows {
            return self.err(
                &codes::INVALID_VALUE,
                csp,
                format!("row count must be in 1..={rows}, got {count}"),
            );
        }
        if let Some(s) = self.k.const_int(start) {
            if s < 0 || s.saturating_add(count) > rows {
                let f = Finding::new(
                    &codes::SHAPE_MISMATCH,
                    ssp,
                    format!(
                        "rows {s}..{} are outside the view's {rows} rows",
                        s.saturating_add(count)
                    ),
                )
                .expected(format!("start in 0..={}", rows - count))
                .actual(s);
                return Err(self.report(f));
            }
        }
        Ok(Value::View(ViewRef {
            rows: Some((start, count as u32)),
            ..v
        }))
    }

    /// `region.cols(start, count)`: columns `start..start + count` of a 2-D TMEM region (its
    /// elements along the second axis), both compile-time integers.
    pub(super) fn tmem_columns(&mut self, t: TmemRef, a: &[Slot], sp: Span) -> R<Value> {
        if t.cols.is_some() {
            let msg = "this is already a column range: take `.cols(...)` of the whole region";
            return self.err(&codes::TYPE_MISMATCH, sp, msg.to_string());
        }
        let (start, ssp) = a[0].clone().expect("required");
        let start = self.const_int(&start, ssp, "the first column")?;
        let (count, csp) = a[1].clone().expect("required");
        let count = self.const_int(&count, csp, "the column count")?;
        let region = &self.k.tmems[t.region];
        let Some(&width) = region.shape.get(1).filter(|_| region.shape.len() == 2) else {
            let msg = format!(
                "`.cols(...)` takes columns of a 2-D region; `{}` is {:?}",
                region.name, region.shape
            );
            return self.err(&codes::SHAPE_MISMATCH, sp, msg);
        };
        let width = width as i64;
        if count < 1 || count > width {
            return self.err(
                &codes::INVALID_VALUE,
                csp,
                format!("column count must be in 1..={width}, got {count}"),
            );
        }
        if start < 0 || start.saturating_add(count) > width {
            let f = Finding::new(
                &codes::SHAPE_MISMATCH,
                ssp,
                format!(
                    "columns {start}..{} are outside the region's {width} columns",
                    start.saturating_add(count)
                ),
            )
            .expected(format!("start in 0..={}", width - count))
            .actual(start);
            return Err(self.report(f));
        }
        Ok(Value::Tmem(TmemRef {
            cols: Some(TmemCols {
                start: start as u32,
                count: count as u32,
            }),
            ..t
        }))
    }

    /// `region.stage(index)`: one stage of a staged TMEM region.
    pub(super) fn tmem_stage(&mut self, t: TmemRef, a: &[Slot], sp: Span) -> R<Value> {
        if t.cols.is_some() {
            let msg =
                "take `.stage(...)` before `.cols(...)`: `region.stage(i).cols(start, count)`";
            return self.err(&codes::TYPE_MISMATCH, sp, msg.to_string());
        }
        let (i, isp) = a[0].clone().expect("required");
        let i = self.index_of(i, isp)?;
        Ok(Value::Tmem(TmemRef {
            stage: Some(i),
            ..t
        }))
    }

    /// `view.stage(index)`
    pub(super) fn view_stage(&mut self, v: ViewRef, a: &[Slot], _sp: Span) -> R<Value> {
        let (i, isp) = a[0].clone().expect("required");
        let i = self.index_of(i, isp)?;
        Ok(Value::View(ViewRef {
            stage: Some(i),
            ..v
        }))
    }

    /// `role.fragment(shape, dtype, buffers=1, rows=None)`
    pub(super) fn role_fragment(&mut self, r: RoleId, a: &[Slot], sp: Span) -> R<Value> {
        let shape = self.shape(&a[0], "shape")?;
        let dtype = self.dtype(&a[1], "dtype")?;
        let buffers = self.positive(&a[2], "buffers", Some(1))?;
        if buffers > 2 {
            let s = a[2].as_ref().map_or(sp, |x| x.1);
            return self.err(
                &codes::INVALID_VALUE,
                s,
                format!("a fragment has 1 or 2 buffers, got {buffers}"),
            );
        }
        let rows = self.row_owner(r, &a[3], &shape, buffers)?;
        let name = self.take_name("fragment");
        Ok(Value::Frag(self.k.fragments.push(
            Fragment {
                name,
                role: r,
                shape,
                dtype,
                buffers,
                rows,
            },
            sp,
        )))
    }

    /// `rows=` of a fragment: who holds each row ("thread", "warp" or "warpgroup"), checked
    /// against the role's replica (a warp cannot hold a warpgroup's row) and the shape (the
    /// rows split evenly over the replica's row groups).
    fn row_owner(
        &mut self,
        r: RoleId,
        slot: &Slot,
        shape: &[u32],
        buffers: u32,
    ) -> R<Option<RowOwner>> {
        let (v, s) = match slot {
            None | Some((Value::None, _)) => return Ok(None),
            Some((v, s)) => (v.clone(), *s),
        };
        let Value::Str(name) = v else {
            return self.err(
                &codes::TYPE_MISMATCH,
                s,
                format!(
                    "rows= is \"thread\", \"warp\" or \"warpgroup\", found {}",
                    v.kind_name()
                ),
            );
        };
        let Some(owner) = RowOwner::from_name(&name) else {
            return self.err(
                &codes::INVALID_VALUE,
                s,
                format!("rows= is \"thread\", \"warp\" or \"warpgroup\", got \"{name}\""),
            );
        };
        let role = &self.k.roles[r];
        let replica = role.unit.threads();
        if owner.threads() > replica {
            let msg = format!(
                "a row held by a {} needs a warpgroup role; `{}` is a warp role (one warp per replica)",
                owner.name(),
                role.name
            );
            return self.err(&codes::INVALID_VALUE, s, msg);
        }
        if shape.len() > 2 || buffers > 1 {
            return self.err(
                &codes::SHAPE_MISMATCH,
                s,
                "a row-layout fragment is a (rows, columns) tile or a (rows,) vector, with one buffer",
            );
        }
        let groups = replica / owner.threads();
        if !shape[0].is_multiple_of(groups) {
            let msg = format!(
                "{} rows do not split over the {groups} row groups of a {}-thread replica with rows held by a {}: use a multiple of {groups}",
                shape[0],
                replica,
                owner.name()
            );
            return self.err(&codes::SHAPE_MISMATCH, s, msg);
        }
        Ok(Some(owner))
    }

    /// `lm.role(warp= | warps= | warpgroup= | warpgroups=, regs=None)`
    pub(super) fn role_decl(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let given: Vec<usize> = (0..4).filter(|i| a[*i].is_some()).collect();
        if given.len() != 1 {
            return self
                .err(
                    &codes::BAD_ARGUMENTS,
                    sp,
                    "a role is declared with exactly one of warp=, warps=, warpgroup=, warpgroups=",
                )
                .map_err(|r| {
                    self.help_last(
                        r,
                        "e.g. lm.role(warpgroup=0, regs=40) or lm.role(warps=[0, 1, 2, 3])",
                    )
                });
        }
        let i = given[0];
        let unit = if i < 2 {
            RoleUnit::Warp
        } else {
            RoleUnit::Warpgroup
        };
        let (v, s) = a[i].clone().expect("given");
        let items = match v {
            Value::Tuple(items) => items,
            other => vec![other],
        };
        let mut units = Vec::new();
        for item in items {
            let n = self.const_int(&item, s, "a warp index")?;
            if !(0..32).contains(&n) {
                return self.err(
                    &codes::INVALID_VALUE,
                    s,
                    format!("warp and warpgroup indices must be in 0..32, got {n}"),
                );
            }
            units.push(n as u32);
        }
        if units.is_empty() {
            return self.err(&codes::INVALID_VALUE, s, "a role needs at least one warp");
        }
        let regs = match self.opt_int(&a[4], "regs")? {
            None => None,
            Some(r) if (1..=255).contains(&r) => Some(r as u32),
            Some(r) => {
                let s = a[4].as_ref().map_or(sp, |x| x.1);
                return self.err(
                    &codes::INVALID_VALUE,
                    s,
                    format!("a register budget must be in 1..=255 per thread, got {r}"),
                );
            }
        };
        let name = self.take_name("role");
        Ok(Value::Role(self.k.roles.push(
            Role {
                name,
                unit,
                units,
                regs,
            },
            sp,
        )))
    }
}
