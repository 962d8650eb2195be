//! `completion/complete` on `/v1/mcp`: values for prompt arguments and resource-template variables, read
//! through the list operations as the caller (`list_agents`, `list_tasks`, `list_sessions`,
//! `list_task_files`, `list_artifacts`, `list_workspaces`), so nothing outside the caller's workspaces and
//! key is ever offered. Each source reads one page of its newest entries: a completion is a hint, not a
//! search.

use super::prompts::{self, Fill};
use super::resources::{self, Kind};
use crate::cx::Cx;
use crate::error::Code;
use crate::mcp::features::{filter_prefix, Completion, CompletionRef};
use crate::mcp::RpcError;
use crate::ops::{self, help_center};
use serde_json::{json, Value};

/// `completion/complete`.
pub async fn complete(cx: &Cx<'_>, request: &Completion<'_>) -> Result<Vec<String>, RpcError> {
    let fill = match request.reference {
        CompletionRef::Prompt(name) => {
            let prompt = prompts::find(name)
                .ok_or_else(|| RpcError::invalid_params(format!("Invalid params: no prompt named {name:?}")))?;
            prompt.args.iter().find(|a| a.name == request.argument).map(|a| a.fill)
        }
        CompletionRef::Resource(uri) => {
            let template = resources::find_template(uri)
                .ok_or_else(|| RpcError::invalid_params(format!("Invalid params: no resource template {uri:?}")))?;
            template_fill(template.kind, request.argument)
        }
    };
    let Some(fill) = fill else {
        let message = format!("Invalid params: no argument named {:?} to complete", request.argument);
        return Err(RpcError::invalid_params(message));
    };
    let context = |name: &str| request.context.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
    let (typed, prefix) = match fill {
        // In a list only the last item is being typed; the items before it stay as they are.
        Fill::Agents => match request.value.rsplit_once(',') {
            Some((before, last)) => (last.trim_start(), format!("{before}, ")),
            None => (request.value, String::new()),
        },
        _ => (request.value, String::new()),
    };
    let candidates = match fill {
        Fill::Text => vec![],
        Fill::Agent | Fill::Agents => {
            let list = run(cx, "list_agents", json!({"limit": 200})).await?;
            items(&list, "agents", |a| {
                a["handle"]
                    .as_str()
                    .map(|h| format!("@{}", h.trim_start_matches('@')))
                    .or(a["id"].as_str().map(str::to_owned))
            })
        }
        Fill::Task => {
            let list = run(cx, "list_tasks", json!({"limit": 100})).await?;
            items(&list, "tasks", |t| t["task_id"].as_str().map(str::to_owned))
        }
        Fill::Session => {
            let list = run(cx, "list_sessions", json!({"limit": 100})).await?;
            items(&list, "sessions", |s| s["session_id"].as_str().map(str::to_owned))
        }
        Fill::File => {
            let task = context("task_id");
            if task.is_empty() {
                vec![]
            } else {
                let list = run(cx, "list_task_files", json!({"task_id": task, "limit": 500})).await?;
                items(&list, "files", |f| f["path"].as_str().map(str::to_owned))
            }
        }
        Fill::Artifact => {
            let list = run(cx, "list_artifacts", json!({"limit": 200})).await?;
            items(&list, "artifacts", |a| a["artifact_id"].as_str().map(str::to_owned))
        }
        Fill::Workspace => {
            let list = run(cx, "list_workspaces", json!({})).await?;
            items(&list, "workspaces", |w| w["slug"].as_str().map(str::to_owned))
        }
        Fill::Lang => vec!["en".to_owned(), "zh".to_owned()],
        Fill::HelpSlug => {
            let lang = if context("lang") == "zh" { "zh" } else { "en" };
            help_center::ARTICLES
                .iter()
                .filter(|a| a.lang == lang)
                .map(|a| a.slug.strip_prefix("zh-").unwrap_or(a.slug).to_owned())
                .collect()
        }
    };
    // An `@` is optional when typing a handle.
    let typed = if matches!(fill, Fill::Agent | Fill::Agents) { typed.trim_start_matches('@') } else { typed };
    let bare = |c: &String| c.trim_start_matches('@').to_owned();
    let mut values: Vec<String> = if matches!(fill, Fill::Agent | Fill::Agents) {
        let kept = filter_prefix(candidates.iter().map(bare), typed);
        candidates.into_iter().filter(|c| kept.contains(&bare(c))).collect()
    } else {
        filter_prefix(candidates, typed)
    };
    values.dedup();
    Ok(values.into_iter().map(|v| format!("{prefix}{v}")).collect())
}

/// What fills a template's variable.
fn template_fill(kind: Kind, variable: &str) -> Option<Fill> {
    Some(match (kind, variable) {
        (Kind::Help, "lang") => Fill::Lang,
        (Kind::Help, "slug") => Fill::HelpSlug,
        (Kind::TaskFile, "task_id") => Fill::Task,
        (Kind::TaskFile, "path") => Fill::File,
        (Kind::Artifact, "artifact_id") => Fill::Artifact,
        (Kind::Transcript | Kind::Result, "session_id") => Fill::Session,
        _ => return None,
    })
}

fn items(list: &Value, key: &str, pick: impl Fn(&Value) -> Option<String>) -> Vec<String> {
    list[key].as_array().into_iter().flatten().filter_map(pick).collect()
}

/// Runs one list operation as the caller. A task the caller cannot see offers nothing rather than an error:
/// completions are asked for while typing.
async fn run(cx: &Cx<'_>, name: &str, args: Value) -> Result<Value, RpcError> {
    let op = ops::find(name).expect("completions read through operations of the table");
    match ops::invoke(cx, op, args).await {
        Ok(list) => Ok(list),
        Err(e) if matches!(e.code, Code::NotFound | Code::Forbidden | Code::InvalidParams) => Ok(Value::Null),
        Err(e) => Err(resources::api_error(&e)),
    }
}
