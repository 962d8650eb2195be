//! The operation table as an MCP [`ToolHost`]: `tools/list` entries derived from each row, and
//! `tools/call` through [`ops::invoke`], with failures as results carrying the API's code. Rows marked
//! `task: true` may be answered with an MCP task ([`ops::mcp_tasks`]); `read_session` reports the events
//! it read as progress where the client can take a stream. Resources, prompts and completions come from
//! their own tables beside it (`ops::resources`, `ops::prompts`, `ops::completions`), read through the
//! same operations.

use crate::cx::Cx;
use crate::error::ApiError;
use crate::mcp::features::{Completed, Completion, Features, PromptCall, ReadFailure};
use crate::mcp::{
    results, CallOutcome, Era, Progress, RpcError, TaskAnswer, TaskMethod, TaskMode, ToolCall, ToolHost, ToolReply,
};
use crate::ops::mcp_tasks::{self, TaskError};
use crate::ops::prompts;
use crate::ops::sessions::{self, SessionPage};
use crate::ops::{self, completions, resource_watch, resources, Op, Tool, MANAGE, OPS};
use futures::future::LocalBoxFuture;
use serde_json::{json, Map, Value};
use std::sync::OnceLock;

/// The tools of `/v1/mcp`, derived once per isolate: the table is static, so its schemas are too.
pub fn operator_tools() -> &'static [Value] {
    static TOOLS: OnceLock<Vec<Value>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let own = OPS.iter().filter(|op| op.tool == Tool::Own).map(Op::tool_entry);
        own.chain(std::iter::once(manage_entry())).collect()
    })
}

/// The one tool for every [`Tool::Grouped`] row: its input names the operation and passes its arguments.
fn manage_entry() -> Value {
    let grouped: Vec<&Op> = OPS.iter().filter(|op| op.tool == Tool::Grouped).collect();
    let names: Vec<&str> = grouped.iter().map(|op| op.name).collect();
    let mut topics: Vec<String> = Vec::new();
    for topic in grouped.iter().map(|op| format!("`{}`", op.group.name())) {
        if !topics.contains(&topic) {
            topics.push(topic);
        }
    }
    let description = format!(
        "Settings and seldom-used operations, by name with REST's roles: `operation` names one, `arguments` \
         are its fields; `help` with its topic ({}) shows them.",
        topics.join(", ")
    );
    json!({
        "name": MANAGE,
        "title": "Settings and seldom-used operations",
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": names, "description": "The operation to run."},
                "arguments": {"type": "object", "description": "Its fields, as its REST body and path take them."},
            },
            "required": ["operation"],
            "additionalProperties": false,
        },
        "annotations": {
            "title": "Settings and seldom-used operations",
            "readOnlyHint": false,
            "destructiveHint": true,
            "idempotentHint": false,
            "openWorldHint": false,
        },
    })
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
            let (op, arguments) = match ops::tool_call(name, arguments)? {
                Ok(found) => found,
                Err(e) => return Some(results::failure(&e.finish(&self.cx.request_id))),
            };
            Some(match ops::invoke(self.cx, op, arguments).await {
                Ok(value) => results::success(value),
                Err(e) => results::failure(&e),
            })
        })
    }

    fn call_with<'a>(&'a self, call: ToolCall<'a>) -> LocalBoxFuture<'a, ToolReply> {
        Box::pin(async move {
            // The one copy of the arguments: the operation takes them owned. Only a followed read_session
            // keeps them past it (they are a session id and a cursor).
            let (op, arguments) = match ops::tool_call(call.name, Value::Object(call.arguments.into_owned())) {
                None => return ToolReply::UnknownTool,
                Some(Err(e)) => return ToolReply::Done(results::failure(&e.finish(&self.cx.request_id))),
                Some(Ok(found)) => found,
            };
            let followed = call.progress.filter(|_| op.name == "read_session").map(|p| (p, arguments.clone()));
            let value = match ops::invoke(self.cx, op, arguments).await {
                Ok(value) => value,
                Err(e) => return ToolReply::Done(results::failure(&e)),
            };
            // The server decides on the 2026 wire; on the 2025 wire the client asked.
            let ttl_ms = match call.task {
                TaskMode::Asked { ttl_ms } => Some(ttl_ms),
                TaskMode::Allowed => Some(None),
                TaskMode::No => None,
            };
            if let (true, Some(ttl_ms)) = (op.task, ttl_ms) {
                match mcp_tasks::create(self.cx, op.name, &value, ttl_ms).await {
                    Ok(Some(task)) => return ToolReply::Task(Box::new(task)),
                    Ok(None) => {}
                    Err(e) => return ToolReply::Done(results::failure(&e.finish(&self.cx.request_id))),
                }
            }
            if let Some((progress, arguments)) = followed {
                return match follow_session(self.cx, &arguments, value, progress).await {
                    Ok(page) => ToolReply::Success(page),
                    Err(e) => ToolReply::Done(results::failure(&e.finish(&self.cx.request_id))),
                };
            }
            ToolReply::Success(value)
        })
    }

    fn task_support(&self) -> bool {
        true
    }

    fn task<'a>(&'a self, era: Era, method: TaskMethod<'a>) -> LocalBoxFuture<'a, Result<TaskAnswer, RpcError>> {
        Box::pin(async move {
            let answered = match ops::rate_limit_key(self.cx).await {
                Ok(()) => mcp_tasks::answer(self.cx, era, method).await,
                Err(e) => Err(TaskError::Api(e)),
            };
            answered.map_err(|e| match e {
                TaskError::Rpc(error) => error,
                TaskError::Api(e) => resources::api_error(&e.finish(&self.cx.request_id)),
            })
        })
    }
    fn features(&self) -> Option<&dyn Features> {
        Some(self)
    }
}

impl Features for OperatorTools<'_> {
    fn resources(&self) -> Vec<Value> {
        resources::list()
    }

    fn resource_templates(&self) -> Vec<Value> {
        resources::template_entries()
    }

    fn read_resource<'a>(&'a self, uri: &'a str) -> LocalBoxFuture<'a, Result<Vec<Value>, ReadFailure>> {
        Box::pin(resources::read(self.cx, uri))
    }

    fn prompts(&self) -> Vec<Value> {
        prompts::list()
    }

    fn get_prompt<'a>(&'a self, call: PromptCall<'a>) -> LocalBoxFuture<'a, Result<Value, RpcError>> {
        Box::pin(prompts::get(self.cx, call))
    }

    fn complete<'a>(&'a self, request: Completion<'a>) -> LocalBoxFuture<'a, Result<Completed, RpcError>> {
        Box::pin(async move { completions::complete(self.cx, &request).await })
    }

    fn can_watch(&self) -> bool {
        true
    }

    fn watchable<'a>(&'a self, uri: &'a str) -> LocalBoxFuture<'a, Result<bool, ReadFailure>> {
        Box::pin(resource_watch::watchable(self.cx, uri))
    }

    fn watch<'a>(&'a self, uris: &'a [String], updated: &'a dyn Fn(&str) -> bool) -> LocalBoxFuture<'a, ()> {
        Box::pin(resource_watch::watch(self.cx, uris, updated))
    }
}
/// A `read_session` whose client takes progress on a stream: each event, as it lands, is one progress
/// step (its position, and its type and text), and the result is every event the call saw.
async fn follow_session(cx: &Cx<'_>, arguments: &Value, first: Value, progress: &Progress) -> Result<Value, ApiError> {
    let first: SessionPage = serde_json::from_value(first).map_err(ApiError::cause)?;
    let mut step = 0;
    let mut report = |event: &Map<String, Value>| {
        step += 1;
        progress.report(step as f64, None, Some(&event_message(event)))
    };
    let page = sessions::follow(cx, arguments, first, &mut report).await?;
    serde_json::to_value(page).map_err(ApiError::cause)
}

/// An event as a progress message: its type, and its text (cut to 200 characters) when it has one.
fn event_message(event: &Map<String, Value>) -> String {
    let kind = event.get("type").and_then(Value::as_str).unwrap_or("event");
    let text = event.get("text").or_else(|| event.get("reason")).or_else(|| event.get("name")).and_then(Value::as_str);
    match text {
        Some(text) => format!("{kind}: {}", text.chars().take(200).collect::<String>()),
        None => kind.to_owned(),
    }
}
