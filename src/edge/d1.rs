//! [`Sql`] over a D1 binding. One `all` or `batch` call is one round trip; a batch is atomic.

use crate::store::{DbError, DbResult, Param, Row, Sql, Stmt};
use futures::future::LocalBoxFuture;
use wasm_bindgen::JsValue;
use worker::{D1Database, D1PreparedStatement};

pub struct D1(pub D1Database);

fn js(p: &Param) -> JsValue {
    match p {
        Param::Null => JsValue::NULL,
        // D1 binds JS numbers; our integers (times in ms, cents, counts) are far inside 2^53.
        Param::Int(i) => JsValue::from_f64(*i as f64),
        Param::Real(f) => JsValue::from_f64(*f),
        Param::Text(s) => JsValue::from_str(s),
    }
}

fn err(e: worker::Error) -> DbError {
    DbError::from_message(e.to_string())
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
            let result = self.prepare(&stmt)?.all().await.map_err(err)?;
            if let Some(e) = result.error() {
                return Err(DbError::from_message(e));
            }
            result.results::<Row>().map_err(err)
        })
    }

    fn batch(&self, stmts: Vec<Stmt>) -> LocalBoxFuture<'_, DbResult<Vec<Vec<Row>>>> {
        Box::pin(async move {
            let prepared = stmts.iter().map(|s| self.prepare(s)).collect::<DbResult<Vec<_>>>()?;
            let results = self.0.batch(prepared).await.map_err(err)?;
            results.iter().map(|r| r.results::<Row>().map_err(err)).collect()
        })
    }
}
