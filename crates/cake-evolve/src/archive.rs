//! The archive: one SQLite file per run directory (`archive.sqlite`, WAL journal), a `runs` table
//! and one `candidates` row per candidate, each committed in its own transaction the moment its
//! cascade ends. A `kill -9` therefore loses at most the candidate in flight; `--resume` reads
//! the rows back and goes on, and `UNIQUE(run, hash)` makes a candidate seen before a no-op.

use crate::budget::{Budget, Spent};
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

pub const FILE: &str = "archive.sqlite";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    id        TEXT PRIMARY KEY,
    created   TEXT NOT NULL,
    contract  TEXT NOT NULL,
    seed      TEXT NOT NULL,
    target    TEXT NOT NULL,
    proposer  TEXT NOT NULL,
    budget    TEXT NOT NULL,   -- JSON: Budget
    config    TEXT NOT NULL,   -- JSON: the rest of the run's settings
    status    TEXT NOT NULL    -- running | done: <why> | ...
);
CREATE TABLE IF NOT EXISTS candidates (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    run         TEXT NOT NULL REFERENCES runs(id),
    hash        TEXT NOT NULL,
    generation  INTEGER NOT NULL,
    parents     TEXT NOT NULL,  -- JSON array of parent hashes
    proposer    TEXT NOT NULL,
    source      TEXT NOT NULL,
    stage       TEXT NOT NULL,  -- rejected | ranked_out | estimated | evaluated
    findings    TEXT,           -- JSON: cake.findings/v1
    niche       TEXT,
    bottleneck  TEXT,
    cost_us     REAL,           -- the estimator's prediction
    build       TEXT,           -- JSON: ptxas resource report
    correctness TEXT,           -- passed | failed | error | quarantined (NULL: not run)
    verdict     TEXT,
    evidence    TEXT,           -- JSON: cake.evidence/v0
    measured_us REAL,
    speedup     REAL,
    tokens      INTEGER NOT NULL,
    wall_s      REAL NOT NULL,
    gpu_s       REAL NOT NULL,
    created     TEXT NOT NULL,
    UNIQUE(run, hash)
);
-- Spending not attributable to a candidate (a proposal that produced nothing new).
CREATE TABLE IF NOT EXISTS overhead (
    run        TEXT NOT NULL REFERENCES runs(id),
    generation INTEGER NOT NULL,
    note       TEXT NOT NULL,
    tokens     INTEGER NOT NULL,
    wall_s     REAL NOT NULL,
    gpu_s      REAL NOT NULL
);
";

/// How far a candidate's cascade went, and how it ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The front-end or verifier reported errors; never built.
    Rejected,
    /// Clean, but outside the top k by predicted time.
    RankedOut,
    /// Clean and estimated; not evaluated (model-only runs).
    Estimated,
    /// Went through the harness (see `correctness`).
    Evaluated,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Rejected => "rejected",
            Stage::RankedOut => "ranked_out",
            Stage::Estimated => "estimated",
            Stage::Evaluated => "evaluated",
        }
    }

    fn parse(s: &str) -> Stage {
        match s {
            "rejected" => Stage::Rejected,
            "ranked_out" => Stage::RankedOut,
            "estimated" => Stage::Estimated,
            _ => Stage::Evaluated,
        }
    }
}

/// One candidate, as stored.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Candidate {
    pub seq: i64,
    pub hash: String,
    pub generation: i64,
    pub parents: Vec<String>,
    pub proposer: String,
    pub source: String,
    pub stage: Stage,
    pub findings: Option<Value>,
    pub niche: Option<String>,
    pub bottleneck: Option<String>,
    pub cost_us: Option<f64>,
    pub build: Option<Value>,
    pub correctness: Option<String>,
    pub verdict: Option<String>,
    pub evidence: Option<Value>,
    pub measured_us: Option<f64>,
    pub speedup: Option<f64>,
    pub spent: Spent,
    pub created: String,
}

impl Candidate {
    /// Passed the correctness protocol and its timing was believed.
    pub fn validated(&self) -> bool {
        self.correctness.as_deref() == Some("passed")
    }
}

/// A run's settings, as stored.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRow {
    pub id: String,
    pub created: String,
    pub contract: String,
    pub seed: String,
    pub target: String,
    pub proposer: String,
    pub budget: Budget,
    pub config: Value,
    pub status: String,
}

pub struct Archive {
    conn: Connection,
}

fn json_text(v: &Option<Value>) -> Option<String> {
    v.as_ref().map(Value::to_string)
}

fn json_value(s: Option<String>) -> Option<Value> {
    s.and_then(|s| serde_json::from_str(&s).ok())
}

impl Archive {
    /// Open (creating if needed) the archive in `dir`.
    pub fn open(dir: &Path) -> Result<Archive, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join(FILE);
        let conn = Connection::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        // WAL: a committed transaction survives the process being killed at any point; FULL
        // also syncs each commit to disk, so a machine crash keeps it too.
        conn.pragma_update(None, "journal_mode", "WAL")
            .and_then(|_| conn.pragma_update(None, "synchronous", "FULL"))
            .and_then(|_| conn.busy_timeout(std::time::Duration::from_secs(10)))
            .and_then(|_| conn.execute_batch(SCHEMA))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Archive { conn })
    }

    /// Open an existing archive only (for reports and status).
    pub fn open_existing(dir: &Path) -> Result<Archive, String> {
        if !dir.join(FILE).exists() {
            return Err(format!(
                "{} has no {FILE}: not a run directory",
                dir.display()
            ));
        }
        Archive::open(dir)
    }

    pub fn create_run(&self, run: &RunRow) -> Result<(), String> {
        self.conn
            .execute(
                "INSERT INTO runs (id, created, contract, seed, target, proposer, budget, config, status)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    run.id,
                    run.created,
                    run.contract,
                    run.seed,
                    run.target,
                    run.proposer,
                    serde_json::to_string(&run.budget).unwrap_or_default(),
                    run.config.to_string(),
                    run.status
                ],
            )
            .map(|_| ())
            .map_err(|e| format!("archive: {e}"))
    }

    pub fn set_status(&self, run: &str, status: &str) -> Result<(), String> {
        self.conn
            .execute(
                "UPDATE runs SET status = ?2 WHERE id = ?1",
                params![run, status],
            )
            .map(|_| ())
            .map_err(|e| format!("archive: {e}"))
    }

    pub fn set_budget(&self, run: &str, budget: &Budget) -> Result<(), String> {
        self.conn
            .execute(
                "UPDATE runs SET budget = ?2 WHERE id = ?1",
                params![run, serde_json::to_string(budget).unwrap_or_default()],
            )
            .map(|_| ())
            .map_err(|e| format!("archive: {e}"))
    }

    pub fn runs(&self) -> Result<Vec<RunRow>, String> {
        let mut st = self
            .conn
            .prepare("SELECT id, created, contract, seed, target, proposer, budget, config, status FROM runs ORDER BY created, id")
            .map_err(|e| format!("archive: {e}"))?;
        let rows = st
            .query_map([], |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    created: r.get(1)?,
                    contract: r.get(2)?,
                    seed: r.get(3)?,
                    target: r.get(4)?,
                    proposer: r.get(5)?,
                    budget: serde_json::from_str(&r.get::<_, String>(6)?).unwrap_or_default(),
                    config: serde_json::from_str(&r.get::<_, String>(7)?).unwrap_or(Value::Null),
                    status: r.get(8)?,
                })
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| format!("archive: {e}"))?;
        Ok(rows)
    }

    pub fn run(&self, id: &str) -> Result<Option<RunRow>, String> {
        Ok(self.runs()?.into_iter().find(|r| r.id == id))
    }

    /// Store a candidate in its own transaction; its `seq`, or `None` when the run already has
    /// its hash.
    pub fn insert(&mut self, run: &str, c: &Candidate) -> Result<Option<i64>, String> {
        let tx = self
            .conn
            .transaction()
            .map_err(|e| format!("archive: {e}"))?;
        let n = tx
            .execute(
                "INSERT OR IGNORE INTO candidates (run, hash, generation, parents, proposer, source,
                    stage, findings, niche, bottleneck, cost_us, build, correctness, verdict,
                    evidence, measured_us, speedup, tokens, wall_s, gpu_s, created)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                    ?17, ?18, ?19, ?20, ?21)",
                params![
                    run,
                    c.hash,
                    c.generation,
                    serde_json::to_string(&c.parents).unwrap_or_default(),
                    c.proposer,
                    c.source,
                    c.stage.as_str(),
                    json_text(&c.findings),
                    c.niche,
                    c.bottleneck,
                    c.cost_us,
                    json_text(&c.build),
                    c.correctness,
                    c.verdict,
                    json_text(&c.evidence),
                    c.measured_us,
                    c.speedup,
                    c.spent.tokens as i64,
                    c.spent.wall_s,
                    c.spent.gpu_s,
                    c.created,
                ],
            )
            .map_err(|e| format!("archive: {e}"))?;
        let seq = tx.last_insert_rowid();
        tx.commit().map_err(|e| format!("archive: {e}"))?;
        Ok((n == 1).then_some(seq))
    }

    pub fn insert_overhead(
        &self,
        run: &str,
        generation: i64,
        note: &str,
        spent: &Spent,
    ) -> Result<(), String> {
        self.conn
            .execute(
                "INSERT INTO overhead (run, generation, note, tokens, wall_s, gpu_s) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![run, generation, note, spent.tokens as i64, spent.wall_s, spent.gpu_s],
            )
            .map(|_| ())
            .map_err(|e| format!("archive: {e}"))
    }

    pub fn contains(&self, run: &str, hash: &str) -> Result<bool, String> {
        self.conn
            .query_row(
                "SELECT 1 FROM candidates WHERE run = ?1 AND hash = ?2",
                params![run, hash],
                |_| Ok(()),
            )
            .optional()
            .map(|o| o.is_some())
            .map_err(|e| format!("archive: {e}"))
    }

    /// Every candidate of a run, in commit order.
    pub fn candidates(&self, run: &str) -> Result<Vec<Candidate>, String> {
        let mut st = self
            .conn
            .prepare(
                "SELECT seq, hash, generation, parents, proposer, source, stage, findings, niche,
                        bottleneck, cost_us, build, correctness, verdict, evidence, measured_us,
                        speedup, tokens, wall_s, gpu_s, created
                 FROM candidates WHERE run = ?1 ORDER BY seq",
            )
            .map_err(|e| format!("archive: {e}"))?;
        let rows = st
            .query_map(params![run], |r| {
                Ok(Candidate {
                    seq: r.get(0)?,
                    hash: r.get(1)?,
                    generation: r.get(2)?,
                    parents: serde_json::from_str(&r.get::<_, String>(3)?).unwrap_or_default(),
                    proposer: r.get(4)?,
                    source: r.get(5)?,
                    stage: Stage::parse(&r.get::<_, String>(6)?),
                    findings: json_value(r.get(7)?),
                    niche: r.get(8)?,
                    bottleneck: r.get(9)?,
                    cost_us: r.get(10)?,
                    build: json_value(r.get(11)?),
                    correctness: r.get(12)?,
                    verdict: r.get(13)?,
                    evidence: json_value(r.get(14)?),
                    measured_us: r.get(15)?,
                    speedup: r.get(16)?,
                    spent: Spent {
                        tokens: r.get::<_, i64>(17)?.max(0) as u64,
                        wall_s: r.get(18)?,
                        gpu_s: r.get(19)?,
                    },
                    created: r.get(20)?,
                })
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| format!("archive: {e}"))?;
        Ok(rows)
    }

    /// Everything the run has spent: its candidates plus unattributed overhead.
    pub fn spent(&self, run: &str) -> Result<Spent, String> {
        let q = |table: &str| -> Result<Spent, String> {
            self.conn
                .query_row(
                    &format!("SELECT COALESCE(SUM(tokens), 0), COALESCE(SUM(wall_s), 0.0), COALESCE(SUM(gpu_s), 0.0) FROM {table} WHERE run = ?1"),
                    params![run],
                    |r| {
                        Ok(Spent {
                            tokens: r.get::<_, i64>(0)?.max(0) as u64,
                            wall_s: r.get(1)?,
                            gpu_s: r.get(2)?,
                        })
                    },
                )
                .map_err(|e| format!("archive: {e}"))
        };
        let mut s = q("candidates")?;
        s.add(&q("overhead")?);
        Ok(s)
    }

    /// The last generation with a stored candidate or overhead row (-1 when none).
    pub fn last_generation(&self, run: &str) -> Result<i64, String> {
        self.conn
            .query_row(
                "SELECT MAX(g) FROM (SELECT MAX(generation) AS g FROM candidates WHERE run = ?1
                                     UNION ALL SELECT MAX(generation) FROM overhead WHERE run = ?1)",
                params![run],
                |r| r.get::<_, Option<i64>>(0),
            )
            .map(|g| g.unwrap_or(-1))
            .map_err(|e| format!("archive: {e}"))
    }
}

/// UTC now, RFC 3339 (seconds).
pub fn now() -> String {
    cake_eval::evidence::rfc3339(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    )
}
