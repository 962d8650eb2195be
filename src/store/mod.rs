//! Every SQL statement of the server lives under this folder, as a `const` beside the function that runs it.
//!
//! The [`Sql`] trait has two implementations: D1 in the Worker (`edge::d1`) and rusqlite in the host tests,
//! which apply the same `migrations/*.sql`. D1 has no interactive transactions, so races are decided in one
//! statement (`INSERT … ON CONFLICT … RETURNING`) or one atomic `batch`, never read-then-write.

pub mod accounts;
pub mod agents;
pub mod artifacts;
pub mod audit;
pub mod billing;
pub mod blobs;
pub mod checkouts;
pub mod conformance;
pub mod connectors;
pub mod console;
pub mod context;
pub mod devices;
pub mod files;
pub mod grant_credentials;
pub mod handoffs;
pub mod keys;
pub mod lanes;
pub mod lease;
pub mod mcp_tasks;
pub mod members;
pub mod metrics;
pub mod oauth;
pub mod proofs;
pub mod push;
pub mod rate;
pub mod receipts;
pub mod records;
pub mod remotes;
pub mod reported;
pub mod requests;
pub mod routines;
pub mod runners;
pub mod sandboxes;
pub mod secrets;
pub mod sessions;
pub mod skills;
pub mod slack;
pub mod tasks;
pub mod usage;
pub mod webhooks;
pub mod workspaces;

use futures::channel::oneshot;
use futures::future::LocalBoxFuture;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::cell::{Cell, RefCell};

/// One bound parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl From<i64> for Param {
    fn from(v: i64) -> Self {
        Param::Int(v)
    }
}
impl From<bool> for Param {
    fn from(v: bool) -> Self {
        Param::Int(v as i64)
    }
}
impl From<&str> for Param {
    fn from(v: &str) -> Self {
        Param::Text(v.to_owned())
    }
}
impl From<String> for Param {
    fn from(v: String) -> Self {
        Param::Text(v)
    }
}
impl From<&String> for Param {
    fn from(v: &String) -> Self {
        Param::Text(v.clone())
    }
}
impl<T: Into<Param>> From<Option<T>> for Param {
    fn from(v: Option<T>) -> Self {
        v.map_or(Param::Null, Into::into)
    }
}

/// A statement and its parameters (`?1`, `?2`, … in the SQL).
#[derive(Debug, Clone)]
pub struct Stmt {
    pub sql: &'static str,
    pub params: Vec<Param>,
}

/// Builds a [`Stmt`]: `stmt!(SQL, a, b)`.
#[macro_export]
macro_rules! stmt {
    ($sql:expr $(, $p:expr)* $(,)?) => {
        $crate::store::Stmt { sql: $sql, params: vec![$($crate::store::Param::from($p)),*] }
    };
}

/// A row as column name → JSON value (integers, reals, text, null).
pub type Row = Map<String, Value>;

/// Why a statement failed. Constraint failures are told apart so callers can map them to contract codes.
#[derive(Debug, Clone, PartialEq)]
pub enum DbError {
    /// A UNIQUE or PRIMARY KEY constraint; the text names the columns (`table.column`).
    Unique(String),
    Other(String),
}

impl DbError {
    /// Classifies an engine message; D1 and SQLite word constraint failures the same way.
    pub fn from_message(message: String) -> Self {
        match message.find("UNIQUE constraint failed: ") {
            // D1 appends `: SQLITE_CONSTRAINT` to SQLite's text; the columns end there.
            Some(at) => DbError::Unique(message[at + 26..].split(": ").next().unwrap_or_default().trim().to_owned()),
            None => DbError::Other(message),
        }
    }

    /// True when the unique constraint that failed covers this column (`table.column`).
    pub fn is_unique_on(&self, column: &str) -> bool {
        matches!(self, DbError::Unique(cols) if cols.split(", ").any(|c| c == column))
    }
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DbError::Unique(cols) => write!(f, "unique constraint failed on {cols}"),
            DbError::Other(m) => f.write_str(m),
        }
    }
}

/// A storage failure is an internal error: `?` keeps its cause for the face to log with the request id.
impl From<DbError> for crate::error::ApiError {
    fn from(e: DbError) -> Self {
        crate::error::ApiError::cause(e)
    }
}

pub type DbResult<T> = Result<T, DbError>;

/// The database: D1 in the Worker, SQLite in host tests. One call is one round trip.
pub trait Sql {
    /// Runs one statement and returns its rows (empty for writes without `RETURNING`).
    fn all(&self, stmt: Stmt) -> LocalBoxFuture<'_, DbResult<Vec<Row>>>;
    /// Runs statements atomically, in order, in one round trip: all commit or none do.
    fn batch(&self, stmts: Vec<Stmt>) -> LocalBoxFuture<'_, DbResult<Vec<Vec<Row>>>>;
}

/// Counts round trips, so responses can report `x-d1-queries` and benchmarks can watch them; and carries
/// statements that ride along with the request's next round trip ([`Counted::ride`]).
pub struct Counted {
    inner: Box<dyn Sql>,
    calls: Cell<u32>,
    riders: RefCell<Vec<Rider>>,
}

/// Statements waiting for the next round trip, and where their rows go.
struct Rider {
    stmts: Vec<Stmt>,
    tell: oneshot::Sender<DbResult<Vec<Vec<Row>>>>,
}

/// The rows of riding statements, once a round trip carried them.
pub type Riding = oneshot::Receiver<DbResult<Vec<Vec<Row>>>>;

impl Counted {
    pub fn new(inner: Box<dyn Sql>) -> Self {
        Self { inner, calls: Cell::new(0), riders: RefCell::default() }
    }
    pub fn calls(&self) -> u32 {
        self.calls.get()
    }

    /// Puts `stmts` in front of the next round trip this request makes, in the same atomic batch, so they
    /// cost no trip of their own (a key lookup, a rate count). [`Counted::flush`] sends them when no round
    /// trip came. A failed batch changed nothing: they wait for the next trip.
    pub fn ride(&self, stmts: Vec<Stmt>) -> Riding {
        let (tell, told) = oneshot::channel();
        self.riders.borrow_mut().push(Rider { stmts, tell });
        told
    }

    /// Sends the riding statements now, in one round trip, if no round trip took them yet.
    pub async fn flush(&self) {
        if !self.riders.borrow().is_empty() {
            let _ = self.carry(vec![]).await;
        }
    }

    /// Drops the riding statements no round trip took (the request is over): their [`Riding`] learns they
    /// were never sent, so whoever put them there can keep them for later instead.
    pub fn unride(&self) {
        self.riders.borrow_mut().clear();
    }

    /// One round trip of `stmts`, with the riding statements in front; each rider gets its own rows.
    async fn carry(&self, mut stmts: Vec<Stmt>) -> DbResult<Vec<Vec<Row>>> {
        self.calls.set(self.calls.get() + 1);
        let riders = std::mem::take(&mut *self.riders.borrow_mut());
        if riders.is_empty() {
            return self.inner.batch(stmts).await;
        }
        let own = stmts.len();
        let mut all: Vec<Stmt> = riders.iter().flat_map(|r| r.stmts.iter().cloned()).collect();
        all.append(&mut stmts);
        match self.inner.batch(all).await {
            Ok(mut results) => {
                for rider in riders {
                    let rest = results.split_off(rider.stmts.len().min(results.len()));
                    let _ = rider.tell.send(Ok(std::mem::replace(&mut results, rest)));
                }
                Ok(results)
            }
            Err(e) => {
                // Atomic: nothing of it happened. Alone, the riders learn why; else they wait for the next trip.
                if own == 0 {
                    for rider in riders {
                        let _ = rider.tell.send(Err(e.clone()));
                    }
                } else {
                    self.riders.borrow_mut().splice(0..0, riders);
                }
                Err(e)
            }
        }
    }
}

impl Sql for Counted {
    fn all(&self, stmt: Stmt) -> LocalBoxFuture<'_, DbResult<Vec<Row>>> {
        if self.riders.borrow().is_empty() {
            self.calls.set(self.calls.get() + 1);
            return self.inner.all(stmt);
        }
        Box::pin(async move { Ok(self.carry(vec![stmt]).await?.pop().unwrap_or_default()) })
    }
    fn batch(&self, stmts: Vec<Stmt>) -> LocalBoxFuture<'_, DbResult<Vec<Vec<Row>>>> {
        Box::pin(self.carry(stmts))
    }
}

/// Typed reads over any [`Sql`].
pub async fn rows<T: DeserializeOwned>(db: &dyn Sql, stmt: Stmt) -> DbResult<Vec<T>> {
    db.all(stmt).await?.into_iter().map(decode).collect()
}

pub async fn first<T: DeserializeOwned>(db: &dyn Sql, stmt: Stmt) -> DbResult<Option<T>> {
    Ok(rows(db, stmt).await?.into_iter().next())
}

/// Decodes one row into a type; column names are field names.
pub fn decode<T: DeserializeOwned>(row: Row) -> DbResult<T> {
    serde_json::from_value(Value::Object(row)).map_err(|e| DbError::Other(format!("row decode: {e}")))
}

pub use crate::rules::sql_values::{int_bool, json_text};
