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

/// [`operator_tools`] written out once per isolate: `tools/list` answers with these bytes.
fn operator_tools_text() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| Value::from(operator_tools().to_vec()).to_string())
}

/// The operator server's tools, bound to one request's context.
pub struct OperatorTools<'a> {
    pub cx: &'a Cx<'a>,
}

impl ToolHost for OperatorTools<'_> {
    fn tools(&self) -> Vec<Value> {
        operator_tools().to_vec()
    }

    fn tools_text(&self) -> Option<&str> {
        Some(operator_tools_text())
    }

    fn input_schema(&self, name: &str) -> Option<Value> {
        operator_tools().iter().find(|t| t["name"] == name).map(|t| t["inputSchema"].clone())
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
