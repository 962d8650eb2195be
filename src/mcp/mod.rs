//! The MCP face: Streamable HTTP, stateless and dual-era, one answer per POST.
//!
//! This module knows JSON-RPC and the two protocol eras; it knows nothing of operations, keys or storage.
//! Tools reach it through [`ToolHost`], so the operator server (`/v1/mcp`), the help server
//! (`/v1/help/mcp`), the session server (`/v1/session/mcp`) and the conformance fixtures share one transport.
//!
//! It must never keep state between requests, mint an `Mcp-Session-Id` or read a clock: every answer is a
//! pure function of the request and the host. What outlives a request (an MCP task) the host keeps
//! durably ([`tasks`]). Two answers are streams rather than one JSON body, each the answer to its own POST
//! (sent as it is made through the request's [`crate::http::StreamOut`]): a `tools/call` on the 2025 wire
//! whose tool reports progress to a client that accepts a stream ([`progress`]), and `subscriptions/listen`
//! on 2026-07-28 ([`listen`]).
//! Hand-written: the Rust MCP SDK (rmcp) is built on tokio, which a Worker's wasm does not run.
//!
//! Order of checks (the one TOOLCHAIN.md records as accepted by Claude Code, Codex, Cursor and the SDK
//! clients; re-verified here with TS SDK 1.32 and client 2.4, Python mcp 2.3 and the conformance suite):
//! 1. not POST → 405 `Allow: POST` (Cursor reconnect-loops on a 400 for GET);
//! 2. Origin/Host not allowed → 403 (DNS-rebinding protection); body over 4 MiB → 413;
//! 3. unparseable → 400 −32700; not one request object → 400 −32600; no `id` → 202, no body;
//! 4. the era: `modern` (2026-07-28, per-request `_meta`) when the `MCP-Protocol-Version` header names it,
//!    or `params._meta` carries a protocol version, or the method is `server/discover`; else `legacy`
//!    (`initialize`, 2025-03-26 … 2025-11-25). Each era module documents its own checks and statuses.

pub mod features;
pub mod fixtures;
mod fixtures_features;
pub mod fixtures_tasks;
mod headers;
mod legacy;
mod listen;
mod modern;
pub mod progress;
pub mod results;
mod rpc;
pub mod tasks;

pub use progress::Progress;
pub use rpc::RpcError;
pub use tasks::{TaskAnswer, TaskInfo, TaskMethod, TaskMode};

use crate::http::{HttpRequest, HttpResponse};
use futures::future::LocalBoxFuture;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

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
    /// The same list already serialized as a JSON array, for hosts whose list is fixed: `tools/list` then
    /// splices these bytes into its answer instead of cloning and re-serializing every schema per request.
    fn tools_text(&self) -> Option<&str> {
        None
    }
    /// A listed tool's `inputSchema` (the modern era checks `Mcp-Param-*` headers against it).
    fn input_schema(&self, name: &str) -> Option<Value> {
        self.tools().into_iter().find(|t| t["name"] == name).map(|mut t| t["inputSchema"].take())
    }
    /// Runs one tool. Business and validation failures are results with `isError: true`, never `Err`.
    fn call<'a>(&'a self, name: &'a str, arguments: Value) -> LocalBoxFuture<'a, CallOutcome>;

    /// Runs one tool with everything the request carried besides its name and arguments: the era, the
    /// client's declared capabilities and the MRTR retry fields (2026-07-28). Only hosts that need those
    /// override it (the conformance fixtures); the default is [`ToolHost::call`].
    fn call_with<'a>(&'a self, call: ToolCall<'a>) -> LocalBoxFuture<'a, ToolReply> {
        Box::pin(async move {
            match self.call(call.name, Value::Object(call.arguments.into_owned())).await {
                Some(result) => ToolReply::Done(result),
                None => ToolReply::UnknownTool,
            }
        })
    }

    /// Resources, prompts and completions, when this server offers them (tools only by default).
    fn features(&self) -> Option<&dyn features::Features> {
        None
    }

    /// Whether this host can run calls as MCP tasks (it then answers [`ToolHost::task`]); it is advertised
    /// as the `tasks` capability (2025-11-25) or the tasks extension (2026-07-28).
    fn task_support(&self) -> bool {
        false
    }

    /// Answers a task method for the caller. Another caller's task, or one past its time, is not found.
    fn task<'a>(&'a self, era: Era, method: TaskMethod<'a>) -> LocalBoxFuture<'a, Result<TaskAnswer, RpcError>> {
        let _ = (era, method);
        Box::pin(async { Err(RpcError::new(rpc::METHOD_NOT_FOUND, "Method not found: this server runs no tasks")) })
    }
}

/// The protocol era a request is served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` handshake revisions, 2025-03-26 … 2025-11-25.
    Legacy,
    /// Per-request `_meta` revisions, 2026-07-28.
    Modern,
}

/// One `tools/call`, as [`ToolHost::call_with`] receives it.
#[derive(Debug, Clone)]
pub struct ToolCall<'a> {
    pub name: &'a str,
    /// `params.arguments`, `{}` when absent: borrowed from the request, so a host that needs it owned
    /// makes the one copy (a body may be megabytes).
    pub arguments: Arguments<'a>,
    pub era: Era,
    /// `_meta["io.modelcontextprotocol/clientCapabilities"]` in the modern era; `{}` in the legacy era,
    /// where a stateless server cannot remember what `initialize` declared.
    pub client_capabilities: &'a Map<String, Value>,
    /// `params.inputResponses` of an MRTR retry (modern era; already checked to be an object of objects).
    pub input_responses: Option<&'a Map<String, Value>>,
    /// `params.requestState` of an MRTR retry, echoed from the server's `InputRequiredResult`.
    pub request_state: Option<&'a str>,
    /// Whether the client asked for (2025-11-25) or allows (2026-07-28) a task instead of the result.
    pub task: TaskMode,
    /// Where the tool may report progress (2025 wire, `progressToken` given, a stream accepted).
    pub progress: Option<&'a Progress>,
}

/// What a host made of a [`ToolCall`].
#[derive(Debug, Clone, PartialEq)]
pub enum ToolReply {
    /// The `CallToolResult` (or, in the modern era, an `InputRequiredResult`).
    Done(Value),
    /// A successful `CallToolResult` of this value: written out once, as its text and, spliced in as is,
    /// its `structuredContent` ([`results::success_text`]), not built as a value and written again.
    Success(Value),
    /// No tool has that name: −32602.
    UnknownTool,
    /// A protocol error the tool itself decided (e.g. −32021 for an undeclared client capability).
    Refused(RpcError),
    /// The call became a task, kept durably before this answer: the client follows it with `tasks/get`.
    Task(Box<TaskInfo>),
}

/// How long a client may reuse a list's answer (`tools/list`, `server/discover`, the features' lists; SEP-2549).
/// Our tool set changes only with a deploy, so a minute of staleness costs little and spares a list request
/// per model turn. `private`: a list may depend on the caller's key (scopes), so no cache may share it across
/// callers. The modern era and the features both hint with them.
pub(crate) const LIST_TTL_MS: u64 = 60_000;
pub(crate) const CACHE_SCOPE: &str = "private";

/// Protocol versions served through `initialize`, oldest first.
pub const LEGACY_VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];
/// The protocol version served through per-request `_meta`.
pub const MODERN_VERSION: &str = "2026-07-28";
/// Request bodies above this are refused with 413 before they are parsed.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Answers one HTTP request to an MCP endpoint. The caller has already checked the method is allowed
/// to reach here only for auth purposes; this function still answers non-POST with 405.
pub async fn serve(spec: &ServerSpec, host: &dyn ToolHost, req: &HttpRequest) -> HttpResponse {
    if !req.method.eq_ignore_ascii_case("POST") {
        let error = RpcError::new(rpc::INVALID_REQUEST, "Method Not Allowed: this MCP endpoint accepts only POST");
        return rpc::error(405, None, &error).with_header("allow", "POST");
    }
    if let Some(reason) = headers::refusal(spec, req) {
        return refusal(req, 403, &reason, None);
    }
    if req.body.len() > MAX_BODY_BYTES {
        let message = format!("Payload Too Large: request bodies are limited to {MAX_BODY_BYTES} bytes");
        return refusal(req, 413, &message, None);
    }
    let request = match rpc::parse(&req.body) {
        rpc::Body::Request(request) => request,
        rpc::Body::Accepted => return HttpResponse::new(202),
        rpc::Body::Invalid { id, error } => return rpc::error(400, id.as_ref(), &error),
    };
    if modern::claims(req, &request) {
        modern::serve(spec, host, req, &request).await
    } else {
        legacy::serve(spec, host, req, &request).await
    }
}

/// Methods answered from the host's fixed lists and the server's own identity: every caller gets the same
/// answer, and nothing in it was read from storage (a host's lists are synchronous, so they cannot read).
const SERVER_WIDE: [&str; 7] = [
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
];

/// Whether `req` asks for a [`SERVER_WIDE`] answer: the server around may give it without looking its key
/// up again (`crate::app` does for a key it looked up moments ago). Only small bodies are read; a large
/// one is answered the ordinary way.
pub fn server_wide(req: &HttpRequest) -> bool {
    #[derive(serde::Deserialize)]
    struct Method<'a> {
        #[serde(borrow)]
        method: Option<&'a str>,
    }
    req.body.len() <= 4096
        && serde_json::from_slice::<Method<'_>>(&req.body)
            .is_ok_and(|m| m.method.is_some_and(|m| SERVER_WIDE.contains(&m)))
}

/// A request refused before any method runs, whether by this transport (origin, size) or by the server
/// around it (a bad credential, a failed lookup): a JSON-RPC error at `status`, numbered by
/// [`rpc::code_for_status`], so an SDK shows the message instead of a bare HTTP failure. The id is the
/// request's when the body can be read; a body over the limit is never parsed, so its id is null. `data`
/// carries what the rest of the API says about the same failure.
pub fn refusal(req: &HttpRequest, status: u16, message: &str, data: Option<Value>) -> HttpResponse {
    let mut error = RpcError::new(rpc::code_for_status(status), message);
    error.data = data;
    let id = (req.body.len() <= MAX_BODY_BYTES).then(|| rpc::request_id(&req.body)).flatten();
    rpc::error(status, id.as_ref(), &error)
}

/// `serverInfo` as both eras show it (`_meta["io.modelcontextprotocol/serverInfo"]` in the modern one).
fn server_info(spec: &ServerSpec) -> Value {
    json!({"name": spec.name, "title": spec.title, "version": spec.version})
}

/// Tools, plus resources, prompts and completions when the host offers them (never logging); every list is
/// fixed (`listChanged: false`), so conforming clients neither wait for nor subscribe to list changes. Tasks
/// on tool calls when the host runs them: the `tasks` capability on the 2025 wire, the extension on 2026's.
fn capabilities(era: Era, host: &dyn ToolHost) -> Value {
    let mut capabilities = Map::new();
    capabilities.insert("tools".into(), json!({"listChanged": false}));
    features::capabilities(era, host, &mut capabilities);
    let mut capabilities = Value::Object(capabilities);
    if host.task_support() {
        match era {
            Era::Legacy => {
                capabilities["tasks"] = json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
            }
            Era::Modern => capabilities["extensions"] = json!({tasks::EXTENSION: {}}),
        }
    }
    capabilities
}

/// A `tools/list` result: `rest` (an object) with `"tools"` first, spliced in as the host's serialized list
/// when it keeps one.
fn tools_result(host: &dyn ToolHost, rest: Value) -> Written {
    match host.tools_text() {
        Some(text) => Written::Text(rpc::splice_first("tools", text, &rest)),
        None => {
            let mut result = rest;
            result["tools"] = Value::Array(host.tools());
            Written::Value(result)
        }
    }
}

/// A result as a value (the era completes it), or already written out with the era's members (a fixed
/// `tools/list`, a tool's success).
enum Written {
    Value(Value),
    Text(String),
}

/// Reads a `tools/call`'s params and hands the call to the host. The era modules wrap the reply; `rest`
/// is what the era adds to a result (nothing, or the modern `resultType` and `_meta`), for one written
/// here.
async fn call_tool(
    host: &dyn ToolHost,
    era: Era,
    params: &Map<String, Value>,
    client_capabilities: &Map<String, Value>,
    progress: Option<&Progress>,
    rest: impl FnOnce() -> Value,
) -> Result<Written, RpcError> {
    let (name, arguments) = call_target(params)?;
    let (input_responses, request_state) = match era {
        Era::Legacy => (None, None),
        Era::Modern => mrtr_fields(params)?,
    };
    let task = tasks::mode(era, params, client_capabilities)?;
    let call = ToolCall { name, arguments, era, client_capabilities, input_responses, request_state, task, progress };
    match host.call_with(call).await {
        ToolReply::Done(result) => Ok(Written::Value(result)),
        ToolReply::Success(value) => Ok(Written::Text(results::success_text(&value, rest()))),
        ToolReply::UnknownTool => Err(RpcError::invalid_params(format!("Unknown tool: {name}"))),
        ToolReply::Refused(error) => Err(error),
        ToolReply::Task(task) => Ok(Written::Value(tasks::created(era, &task))),
    }
}

/// A feature method (resources, prompts, completions) or a task method (`tasks/*`) for the host, or `None`
/// when `method` is neither, so the era answers "method not found".
async fn other_method(
    host: &dyn ToolHost,
    era: Era,
    method: &str,
    params: &Map<String, Value>,
) -> Option<Result<Value, RpcError>> {
    if let Some(answer) = features::answer(host, era, method, params).await {
        return Some(answer);
    }
    let call = match tasks::method(era, method, params)? {
        Ok(call) => call,
        Err(error) => return Some(Err(error)),
    };
    if !host.task_support() {
        return Some(Err(RpcError::new(rpc::METHOD_NOT_FOUND, format!("Method not found: {method}"))));
    }
    Some(match host.task(era, call.clone()).await {
        Ok(answer) => tasks::answer(era, &call, answer),
        Err(error) => Err(error),
    })
}

/// A tool call's arguments, borrowed from the request when it had them.
type Arguments<'a> = Cow<'a, Map<String, Value>>;

/// `params.name` (required) and `params.arguments` (an object, `{}` when absent or null).
fn call_target(params: &Map<String, Value>) -> Result<(&str, Arguments<'_>), RpcError> {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Err(RpcError::invalid_params("Invalid params: tools/call needs params.name, the tool's name"));
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Cow::Owned(Map::new()),
        Some(Value::Object(arguments)) => Cow::Borrowed(arguments),
        Some(_) => return Err(RpcError::invalid_params("Invalid params: params.arguments must be an object")),
    };
    Ok((name, arguments))
}

/// SEP-2322 retry fields: `inputResponses` and `requestState`.
type Retry<'p> = (Option<&'p Map<String, Value>>, Option<&'p str>);

/// Reads the retry fields. Each input response is a client result object; anything else (a number, `null`)
/// is a protocol error rather than something a tool should guess at.
fn mrtr_fields(params: &Map<String, Value>) -> Result<Retry<'_>, RpcError> {
    let input_responses = match params.get("inputResponses") {
        None => None,
        Some(Value::Object(responses)) => {
            if let Some((key, _)) = responses.iter().find(|(_, v)| !v.is_object()) {
                let message = format!(
                    "Invalid params: inputResponses[{}] must be a result object",
                    crate::rules::params::quoted(key)
                );
                return Err(RpcError::invalid_params(message));
            }
            Some(responses)
        }
        Some(_) => return Err(RpcError::invalid_params("Invalid params: inputResponses must be an object")),
    };
    let request_state = match params.get("requestState") {
        None => None,
        Some(Value::String(state)) => Some(state.as_str()),
        Some(_) => return Err(RpcError::invalid_params("Invalid params: requestState must be a string")),
    };
    Ok((input_responses, request_state))
}

#[cfg(test)]
mod testing;

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_servers_own_lists_and_identity_are_server_wide() {
        let asks = |body: Value| server_wide(&post(body));
        for method in ["initialize", "ping", "tools/list", "server/discover", "prompts/list"] {
            assert!(asks(json!({"jsonrpc": "2.0", "id": 1, "method": method})), "{method}");
        }
        for method in ["tools/call", "resources/read", "prompts/get", "tasks/get", "completion/complete"] {
            assert!(!asks(json!({"jsonrpc": "2.0", "id": 1, "method": method})), "{method}");
        }
        let padded = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "x".repeat(5000)}});
        assert!(!asks(padded), "a large body is not read for this");
        assert!(!server_wide(&HttpRequest { body: b"{not json".to_vec(), ..post(json!({})) }));
    }

    #[test]
    fn get_and_delete_are_method_not_allowed_with_an_allow_header() {
        for method in ["GET", "DELETE"] {
            let response = send(HttpRequest { method: method.into(), ..post(json!({})) });
            assert_eq!(response.status, 405);
            assert_eq!(response.header("allow"), Some("POST"));
        }
    }

    #[test]
    fn a_foreign_origin_is_refused_with_403_and_the_requests_id() {
        let response = send(with_header(ping(), "origin", "http://evil.example.com"));
        assert_eq!(response.status, 403);
        assert_eq!(response.json_body()["error"]["code"], json!(rpc::INVALID_REQUEST));
        assert_eq!(response.json_body()["id"], json!(1));
    }

    #[test]
    fn a_listed_origin_and_host_are_served() {
        let spec = ServerSpec { allowed_hosts: vec!["localhost:8787".into()], ..spec() };
        let req = with_header(with_header(ping(), "origin", "http://localhost:8787"), "host", "localhost:8787");
        assert_eq!(send_with(&spec, &TinyHost, req).status, 200);
    }

    #[test]
    fn an_unlisted_host_is_refused_when_hosts_are_configured() {
        let spec = ServerSpec { allowed_hosts: vec!["localhost:8787".into()], ..spec() };
        assert_eq!(send_with(&spec, &TinyHost, with_header(ping(), "host", "evil.example.com")).status, 403);
        assert_eq!(send_with(&spec, &TinyHost, ping()).status, 403, "a missing Host is not a listed one");
    }

    #[test]
    fn a_body_over_four_mebibytes_is_refused_with_413() {
        let req = HttpRequest { body: vec![b' '; MAX_BODY_BYTES + 1], ..ping() };
        let response = send(req);
        assert_eq!(response.status, 413);
        assert_eq!(response.json_body()["error"]["code"], json!(rpc::INVALID_REQUEST));
        assert_eq!(response.json_body().get("id"), Some(&Value::Null), "the body is not read");
    }

    #[test]
    fn broken_json_is_a_400_parse_error() {
        let response = send(HttpRequest { body: b"{nope".to_vec(), ..ping() });
        assert_eq!(response.status, 400);
        assert_eq!(response.json_body()["error"]["code"], json!(rpc::PARSE_ERROR));
    }

    #[test]
    fn a_batch_is_a_400_invalid_request() {
        let response = send(post(json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])));
        assert_eq!(response.status, 400);
        assert_eq!(response.json_body()["error"]["code"], json!(rpc::INVALID_REQUEST));
    }

    #[test]
    fn notifications_and_client_responses_get_202_and_no_body_in_both_eras() {
        let legacy = post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let modern = modern_post(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}));
        let response = post(json!({"jsonrpc": "2.0", "id": 3, "result": {}}));
        for req in [legacy, modern, response] {
            let answer = send(req);
            assert_eq!(answer.status, 202);
            assert!(answer.body.is_empty());
        }
    }

    #[test]
    fn every_answer_is_one_json_body_without_a_session_id() {
        let response = send(ping());
        assert_eq!(response.header("content-type"), Some("application/json"));
        assert_eq!(response.header("mcp-session-id"), None);
    }
}
