//! [`Sql`] over a D1 binding. One `all` or `batch` call is one round trip; a batch is atomic.
//!
//! Rows come back as one `JSON.stringify` of the binding's answer, parsed by `serde_json`: the worker
//! crate's `results()` walks every row and column across the JavaScript boundary (a call per key and per
//! value), which the profile showed as the largest share of a read tool's time in wasm.

use crate::store::{DbError, DbResult, Param, Row, Sql, Stmt};
use futures::future::LocalBoxFuture;
use js_sys::{Array, Function, Promise, Reflect, JSON};
use serde::Deserialize;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::{D1Database, D1PreparedStatement};

pub struct D1(pub D1Database);

/// One statement's answer as the binding gives it (`meta` is not read).
#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    results: Option<Vec<Row>>,
    #[serde(default)]
    error: Option<String>,
}

fn js(p: &Param) -> JsValue {
    match p {
        Param::Null => JsValue::NULL,
        // D1 binds JS numbers; our integers (times in ms, cents, counts) are far inside 2^53.
        Param::Int(i) => JsValue::from_f64(*i as f64),
        Param::Real(f) => JsValue::from_f64(*f),
        Param::Text(s) => JsValue::from_str(s),
    }
}

/// A rejected call's message, with D1's cause (where the SQLite text is) when it has one.
fn js_err(e: JsValue) -> DbError {
    let text = |v: &JsValue| match v.dyn_ref::<js_sys::Error>() {
        Some(e) => String::from(e.message()),
        None => v.as_string().unwrap_or_else(|| format!("{v:?}")),
    };
    let mut message = text(&e);
    if let Some(cause) = e.dyn_ref::<js_sys::Error>().map(|e| e.cause()).filter(|c| !c.is_undefined()) {
        message = format!("{message}: {}", text(&cause));
    }
    DbError::from_message(message)
}

fn err(e: worker::Error) -> DbError {
    DbError::from_message(e.to_string())
}

/// The rows of the value `JSON.stringify` makes of `answer`.
fn parse<T: for<'de> Deserialize<'de>>(answer: &JsValue) -> DbResult<T> {
    let text = JSON::stringify(answer).map_err(js_err)?;
    serde_json::from_str(&String::from(text))
        .map_err(|e| DbError::Other(format!("D1 answered rows that do not parse: {e}")))
}

fn rows(answer: Answer) -> DbResult<Vec<Row>> {
    match answer.error {
        Some(e) => Err(DbError::from_message(e)),
        None => Ok(answer.results.unwrap_or_default()),
    }
}

async fn settled(promise: Result<Promise, JsValue>) -> DbResult<JsValue> {
    JsFuture::from(promise.map_err(js_err)?).await.map_err(js_err)
}

impl D1 {
    fn prepare(&self, stmt: &Stmt) -> DbResult<D1PreparedStatement> {
        let params: Vec<JsValue> = stmt.params.iter().map(js).collect();
        self.0.prepare(stmt.sql).bind(&params).map_err(err)
    }
}

impl Sql for D1 {
    fn all(&self, stmt: Stmt) -> LocalBoxFuture<'_, DbResult<Vec<Row>>> {
        Box::pin(async move {
            let answer = settled(self.prepare(&stmt)?.inner().all()).await?;
            rows(parse(&answer)?)
        })
    }

    fn batch(&self, stmts: Vec<Stmt>) -> LocalBoxFuture<'_, DbResult<Vec<Vec<Row>>>> {
        Box::pin(async move {
            let prepared = stmts.iter().map(|s| self.prepare(s)).collect::<DbResult<Vec<_>>>()?;
            let list: Array = prepared.iter().map(|s| JsValue::from(s.inner().clone())).collect();
            let db: &JsValue = self.0.as_ref();
            let batch: Function = Reflect::get(db, &JsValue::from_str("batch")).map_err(js_err)?.unchecked_into();
            let promise = batch.call1(db, &list).map(|p| p.unchecked_into::<Promise>());
            let answers: Vec<Answer> = parse(&settled(promise).await?)?;
            answers.into_iter().map(rows).collect()
        })
    }
}
