//! The operation table as an MCP [`ToolHost`]: `tools/list` entries derived from each row, and
//! `tools/call` through [`ops::invoke`], with failures as results carrying the API's code.

use crate::cx::Cx;
use crate::mcp::{results, CallOutcome, ToolHost};
use crate::ops::{self, Op, OPS};
use futures::future::LocalBoxFuture;
use serde_json::Value;
use std::sync::OnceLock;

/// The tools of `/v1/mcp`, derived once per isolate: the table is static, so its schemas are too.
pub fn operator_tools() -> &'static [Value] {
    static TOOLS: OnceLock<Vec<Value>> = OnceLock::new();
    TOOLS.get_or_init(|| OPS.iter().filter(|op| op.tool).map(Op::tool_entry).collect())
}

/// The operator server's tools, bound to one request's context.
pub struct OperatorTools<'a> {
    pub cx: &'a Cx<'a>,
}

impl ToolHost for OperatorTools<'_> {
    fn tools(&self) -> Vec<Value> {
        operator_tools().to_vec()
    }

    fn call<'a>(&'a self, name: &'a str, arguments: Value) -> LocalBoxFuture<'a, CallOutcome> {
        Box::pin(async move {
            let op = ops::find(name).filter(|op| op.tool)?;
            Some(match ops::invoke(self.cx, op, arguments).await {
                Ok(value) => results::success(value),
                Err(e) => results::failure(&e),
            })
        })
    }
}
