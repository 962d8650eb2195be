//! The `help` tool: generated from the operation table, so it can never describe a tool that does not
//! exist or miss one that does.

use crate::cx::Cx;
use crate::error::{ApiError, Code};
use crate::ops::{help_guides, prompts, Op, Scope, Tool, MANAGE, OPS};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// What the `workflow` topic (steps, not operations) is about; each group's summary is its doc in
/// [`Group`](crate::ops::Group).
const WORKFLOW_SUMMARY: &str =
    "A task, start to finish: pick an agent, start a session, read its replies, continue or stop.";

const WORKFLOW: &str = "1. list_agents — pick the agent's id. \
2. Generate a unique idempotency_key, then start_session with it, agent_id and the task as message; the reply is the session, the message_id and the cursor just after it. \
3. read_session with session_id, that cursor, that message_id and wait_seconds: 50; repeat with the returned cursor until turn_finished is true (at once, without waiting, whenever has_more is true). \
4. send_message with a new idempotency_key to continue, then read_session again; session_busy means another turn is running: finish reading it and retry. \
Retry a call that timed out with the same key and inputs: the original result is replayed, never done twice.";

/// What the `prompts` topic is about; its steps are the prompt table's own lines.
/// The `prompts` topic's summary, from the prompt and resource-template tables.
fn prompts_summary() -> String {
    let prompts: Vec<String> = super::prompts::PROMPTS.iter().map(|p| format!("/{}", p.name)).collect();
    let templates: Vec<&str> = super::resources::TEMPLATES.iter().map(|t| t.uri).collect();
    format!(
        "The workflows as MCP prompts (slash commands in clients): {}. Resources: {}.",
        prompts.join(", "),
        templates.join(", ")
    )
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Help {
    /// A topic from the list help gives without one (`agents`, `workspaces`, `workflow`, …).
    pub topic: Option<String>,
    /// A workspace slug, used in the examples.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HelpAnswer {
    /// Without `topic`: every topic. With one: just that one.
    pub topics: Vec<Topic>,
    /// With `topic`: its operations (none for `workflow`). Left out without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operations: Option<Vec<OperationHelp>>,
    /// With `topic: "workflow"` or a guide (`connectors/<kind>`): the steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Topic {
    pub topic: String,
    pub summary: String,
    pub operations: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct OperationHelp {
    pub name: String,
    pub description: String,
    /// `read` or `write` (`public` needs no key).
    pub scope: String,
    /// The MCP tool on /v1/mcp that runs it: its own name, or `manage` for those set once and seldom
    /// again; absent when it is REST only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The REST route: method and path.
    pub http: String,
    pub required: Vec<String>,
    /// A body with every required field, to fill in.
    pub skeleton: Value,
    pub usage: String,
}

fn topics() -> Vec<Topic> {
    let mut out: Vec<Topic> = Vec::new();
    for op in OPS {
        match out.iter_mut().find(|t| t.topic == op.group.name()) {
            Some(t) => t.operations.push(op.name.to_owned()),
            None => out.push(Topic {
                topic: op.group.name().to_owned(),
                summary: op.group.summary(),
                operations: vec![op.name.to_owned()],
            }),
        }
    }
    out.push(Topic { topic: "workflow".into(), summary: WORKFLOW_SUMMARY.into(), operations: vec![] });
    out.push(Topic { topic: "prompts".into(), summary: prompts_summary(), operations: vec![] });
    for topic in help_guides::topics() {
        let (summary, _) = help_guides::guide(&topic).expect("every guide topic has a guide");
        let operations = help_guides::OPERATIONS.iter().map(|o| (*o).to_owned()).collect();
        out.push(Topic { topic, summary, operations });
    }
    out
}

/// help
pub async fn help(cx: &Cx<'_>, p: Help) -> Result<HelpAnswer, ApiError> {
    let all = topics();
    let Some(topic) = p.topic else {
        return Ok(HelpAnswer { topics: all, operations: None, steps: None });
    };
    let slug = match p.workspace.as_deref() {
        Some(s) => Some(cx.workspace(Some(s))?.slug.clone()),
        None => cx.workspace(None).ok().map(|m| m.slug.clone()),
    };
    let Some(found) = all.into_iter().find(|t| t.topic == topic) else {
        let names: Vec<String> = topics().into_iter().map(|t| t.topic).collect();
        return Err(ApiError::new(Code::NotFound, format!("no help topic `{topic}`; topics: {}", names.join(", "))));
    };
    let operations = OPS
        .iter()
        .filter(|op| found.operations.iter().any(|o| o == op.name))
        .map(|op| describe(op, slug.as_deref()))
        .collect();
    let steps = match help_guides::guide(&topic) {
        Some((_, text)) => Some(text),
        None if topic == "prompts" => Some(prompts::help_text()),
        None => (topic == "workflow").then(|| WORKFLOW.to_owned()),
    };
    Ok(HelpAnswer { topics: vec![found], operations: Some(operations), steps })
}

fn describe(op: &Op, slug: Option<&str>) -> OperationHelp {
    let (required, skeleton) = skeleton(op, slug);
    OperationHelp {
        name: op.name.to_owned(),
        description: op.description(),
        scope: op.scope.as_str().to_owned(),
        tool: op.mcp_tool().map(str::to_owned),
        http: format!("{} {}", op.method, op.path),
        required,
        skeleton: Value::Object(skeleton),
        usage: usage(op, slug),
    }
}

/// The required fields of an operation and a body holding a placeholder for each.
fn skeleton(op: &Op, slug: Option<&str>) -> (Vec<String>, Map<String, Value>) {
    let schema = op.params_schema();
    let required: Vec<String> =
        schema["required"].as_array().into_iter().flatten().filter_map(|v| v.as_str().map(str::to_owned)).collect();
    let mut body = Map::new();
    for name in &required {
        let ty = schema["properties"][name]["type"].clone();
        let placeholder = match ty.as_str().or_else(|| ty.as_array().and_then(|a| a.first()).and_then(Value::as_str)) {
            Some("integer") | Some("number") => json!(0),
            Some("boolean") => json!(false),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ if name == "workspace" => json!(slug.unwrap_or("<slug>")),
            _ => json!(format!("<{name}>")),
        };
        body.insert(name.clone(), placeholder);
    }
    (required, body)
}

/// One line showing how to call an operation: as a tool when it is one, else as a REST call.
pub fn usage(op: &Op, slug: Option<&str>) -> String {
    usage_with(op, slug, Map::new())
}

/// [`usage`] with some arguments filled in over the skeleton (`null` ones left out).
pub fn usage_with(op: &Op, slug: Option<&str>, args: Map<String, Value>) -> String {
    let (_, mut body) = skeleton(op, slug);
    for (k, v) in args {
        match v {
            Value::Null => body.remove(&k),
            v => body.insert(k, v),
        };
    }
    let takes_workspace = op.params_schema()["properties"].get("workspace").is_some();
    if takes_workspace && !body.contains_key("workspace") && !op.path.contains("{workspace}") {
        if let Some(s) = slug {
            body.insert("workspace".into(), json!(s));
        }
    }
    match op.tool {
        Tool::Own => return format!("{} {}", op.name, Value::Object(body)),
        Tool::Grouped => return format!("{MANAGE} {}", json!({"operation": op.name, "arguments": body})),
        Tool::RestOnly => {}
    }
    let mut path = op.path.to_owned();
    for (k, v) in body.clone() {
        let token = format!("{{{k}}}");
        if path.contains(&token) {
            path = path.replace(&token, v.as_str().unwrap_or_default());
            body.remove(&k);
        }
    }
    let auth = if op.scope == Scope::Public { "" } else { " -H \"Authorization: Bearer $AGENTSKY_API_KEY\"" };
    let data = if op.method == "GET" || op.method == "DELETE" {
        String::new()
    } else {
        format!(" -d '{}'", Value::Object(body))
    };
    format!("curl -X {} \"$AGENTSKY_URL{path}\"{auth}{data}", op.method)
}
