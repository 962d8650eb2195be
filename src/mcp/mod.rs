//! The MCP face: Streamable HTTP, stateless and dual-era, one JSON body per POST.
//!
//! This module knows JSON-RPC and the two protocol eras; it knows nothing of operations, keys or storage.
//! Tools reach it through [`ToolHost`], so the operator server (`/v1/mcp`), the help server
//! (`/v1/help/mcp`), the session server (`/v1/session/mcp`) and the conformance fixtures share one transport.

use crate::http::{HttpRequest, HttpResponse};
use futures::future::LocalBoxFuture;
use serde_json::Value;

/// Who this server says it is, and which browsers' pages may call it.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    pub name: String,
    pub title: String,
    pub version: String,
    /// Shown to the model by clients (Codex uses it as the description of the tools' namespace).
    pub instructions: String,
    /// Origins allowed to call (exact `scheme://host[:port]`). An absent `Origin` header is always accepted.
    pub allowed_origins: Vec<String>,
    /// Host header values allowed (`host[:port]`); empty means any.
    pub allowed_hosts: Vec<String>,
}

/// A tool call's outcome as MCP sees it: the `CallToolResult` object (`content`, `structuredContent`,
/// `isError`), or `None` when no tool has that name (a protocol error, −32602).
pub type CallOutcome = Option<Value>;

/// The tools a server offers. Implemented by the operation table, the help server and the fixtures.
pub trait ToolHost {
    /// The `tools/list` entries: `name`, `title`, `description`, `inputSchema`, `outputSchema`, `annotations`.
    fn tools(&self) -> Vec<Value>;
    /// Runs one tool. Business and validation failures are results with `isError: true`, never `Err`.
    fn call<'a>(&'a self, name: &'a str, arguments: Value) -> LocalBoxFuture<'a, CallOutcome>;
}

/// Answers one HTTP request to an MCP endpoint. The caller has already checked the method is allowed
/// to reach here only for auth purposes; this function still answers non-POST with 405.
pub async fn serve(spec: &ServerSpec, host: &dyn ToolHost, req: &HttpRequest) -> HttpResponse {
    let _ = (spec, host, req);
    HttpResponse::json(501, &serde_json::json!({"error": "mcp transport not built yet"}))
}
