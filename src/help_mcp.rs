//! The Help Center's own MCP server, `POST /v1/help/mcp`: only `help_search` and `help_get` (rows of the
//! operation table), no key, and each call counted against the caller's address.

use crate::cx::Cx;
use crate::mcp::{CallOutcome, ToolHost};
use crate::ops;
use futures::future::LocalBoxFuture;
use serde_json::Value;
use std::sync::OnceLock;

/// The help server's instructions, shown to the model by clients.
pub const INSTRUCTIONS: &str = "The agentsky Help Center, in English and Chinese. \
help_search finds articles by words or a question; help_get reads one by its slug. \
Answer from the article and give its link (the `url` field).";

/// The tools of `/v1/help/mcp`, derived once from the operation table's two rows.
pub const TOOLS: [&str; 2] = ["help_search", "help_get"];

fn help_tools() -> &'static [Value] {
    static LIST: OnceLock<Vec<Value>> = OnceLock::new();
    LIST.get_or_init(|| TOOLS.iter().filter_map(|n| ops::find(n)).map(ops::Op::tool_entry).collect())
}

/// The Help Center's own MCP server: no key, and each call counted against the caller's address.
pub struct HelpTools<'a> {
    pub cx: &'a Cx<'a>,
}

/// Calls a minute one address may make to the help server.
pub const CALLS_PER_MINUTE: u32 = 600;

impl ToolHost for HelpTools<'_> {
    fn tools(&self) -> Vec<Value> {
        help_tools().to_vec()
    }

    fn call<'a>(&'a self, name: &'a str, arguments: Value) -> LocalBoxFuture<'a, CallOutcome> {
        Box::pin(async move {
            let op = ops::find(name).filter(|op| TOOLS.contains(&op.name))?;
            let cx = self.cx;
            let result = async {
                ops::rate_limit(cx, format!("help:{}", cx.client_ip), CALLS_PER_MINUTE).await?;
                (op.run)(cx, arguments).await
            }
            .await;
            Some(match result {
                Ok(value) => crate::mcp::results::success(value),
                Err(e) => crate::mcp::results::failure(&e.finish(&cx.request_id)),
            })
        })
    }
}
