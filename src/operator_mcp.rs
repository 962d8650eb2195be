//! The operation table as an MCP [`ToolHost`]: `tools/list` entries derived from each row, and
//! `tools/call` through [`ops::invoke`], with failures as results carrying the API's code. Resources,
//! prompts and completions come from their own tables beside it (`ops::resources`, `ops::prompts`,
//! `ops::completions`), read through the same operations.

use crate::cx::Cx;
use crate::mcp::features::{Completion, Features, PromptCall, ReadFailure};
use crate::mcp::{results, CallOutcome, RpcError, ToolHost};
use crate::ops::prompts::{self, Args};
use crate::ops::{self, completions, resources, Op, OPS};
use futures::future::LocalBoxFuture;
use serde_json::{json, Value};
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
        Box::pin(async move {
            let Some(prompt) = prompts::find(call.name) else {
                let names: Vec<&str> = prompts::PROMPTS.iter().map(|p| p.name).collect();
                let message = format!("Invalid params: no prompt named {:?}; prompts: {}", call.name, names.join(", "));
                return Err(RpcError::invalid_params(message));
            };
            let args = Args(&call.arguments);
            if let Some(name) = prompts::missing(prompt, &args) {
                return Err(RpcError::invalid_params(format!(
                    "Invalid params: prompt {:?} needs argument {name:?}",
                    prompt.name
                )));
            }
            let mut messages = Vec::new();
            if let Some((kind, arg)) = prompt.embeds {
                let uri = prompts::uri(kind, args.get(arg));
                match resources::read(self.cx, &uri).await {
                    Ok(contents) => {
                        for resource in contents {
                            messages
                                .push(json!({"role": "user", "content": {"type": "resource", "resource": resource}}));
                        }
                    }
                    Err(ReadFailure::NotFound) => {
                        return Err(RpcError::invalid_params(format!(
                            "Invalid params: {arg} {:?} names nothing you can read ({uri})",
                            args.get(arg)
                        )))
                    }
                    Err(ReadFailure::Refused(e)) => return Err(e),
                }
            }
            let text = (prompt.render)(&args);
            messages.push(json!({"role": "user", "content": {"type": "text", "text": text}}));
            Ok(json!({"description": prompt.description, "messages": messages}))
        })
    }

    fn complete<'a>(&'a self, request: Completion<'a>) -> LocalBoxFuture<'a, Result<Vec<String>, RpcError>> {
        Box::pin(async move { completions::complete(self.cx, &request).await })
    }
}
