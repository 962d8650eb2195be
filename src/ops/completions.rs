//! `completion/complete` on `/v1/mcp`: values for prompt arguments and resource-template variables, read
//! through the list operations as the caller (`list_agents`, `list_tasks`, `list_sessions`,
//! `list_task_files`, `list_artifacts`, `list_workspaces`), so nothing outside the caller's workspaces and
//! key is ever offered. Each source reads one page of its newest entries: a completion is a hint, not a
//! search. When a source has more than that page, the answer says `hasMore`. A `workspace` among the
//! context's arguments scopes the lists to that workspace (the list operations check the caller's access).

use super::prompts::{self, Fill};
// The list operations run through the resources' runner: a list the caller may not see offers nothing
// rather than an error (completions are asked for while typing), by the same rule as a resource read.
use super::resources::{self, run, Kind};
use crate::cx::Cx;
use crate::mcp::features::{filter_prefix, Completed, Completion, CompletionRef};
use crate::mcp::RpcError;
use crate::ops::help_center;
use serde_json::{json, Value};
use std::collections::HashSet;

/// `completion/complete`.
pub async fn complete(cx: &Cx<'_>, request: &Completion<'_>) -> Result<Completed, RpcError> {
    let fill = match request.reference {
        CompletionRef::Prompt(name) => {
            let prompt = prompts::find(name).ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "Invalid params: no prompt named {}",
                    crate::rules::params::quoted(name)
                ))
            })?;
            prompt.args.iter().find(|a| a.name == request.argument).map(|a| a.fill)
        }
        CompletionRef::Resource(uri) => {
            let template = resources::find_template(uri).ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "Invalid params: no resource template {}",
                    crate::rules::params::quoted(uri)
                ))
            })?;
            template_fill(template.kind, request.argument)
        }
    };
    let Some(fill) = fill else {
        let message =
            format!("Invalid params: no argument named {} to complete", crate::rules::params::quoted(request.argument));
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
    // Lists in the workspace the caller named, else the connection's.
    let scoped = |mut args: Value| {
        if let Some(w) = Some(context("workspace")).filter(|w| !w.is_empty()) {
            args["workspace"] = json!(w);
        }
        args
    };
    let mut has_more = false;
    let mut list = async |name: &str, args: Value| -> Result<Value, RpcError> {
        let list = run(cx, name, args).await?.unwrap_or(Value::Null);
        has_more |= ["next_cursor", "next_offset"].iter().any(|k| !list[*k].is_null());
        Ok(list)
    };
    let candidates = match fill {
        Fill::Text => vec![],
        Fill::Agent | Fill::Agents => {
            let list = list("list_agents", scoped(json!({"limit": 200}))).await?;
            items(&list, "agents", |a| {
                a["handle"]
                    .as_str()
                    .map(|h| format!("@{}", h.trim_start_matches('@')))
                    .or(a["id"].as_str().map(str::to_owned))
            })
        }
        Fill::Task => {
            let list = list("list_tasks", scoped(json!({"limit": 100}))).await?;
            items(&list, "tasks", |t| t["task_id"].as_str().map(str::to_owned))
        }
        Fill::Session => {
            let list = list("list_sessions", scoped(json!({"limit": 100}))).await?;
            items(&list, "sessions", |s| s["session_id"].as_str().map(str::to_owned))
        }
        Fill::File => {
            // A task's base, or the folder as one session sees it.
            let session = context("session_id");
            let task = match session.as_str() {
                "" => context("task_id"),
                sid => {
                    let row = run(cx, "get_session", json!({"session_id": sid})).await?.unwrap_or(Value::Null);
                    row["task_id"].as_str().unwrap_or_default().to_owned()
                }
            };
            if task.is_empty() {
                vec![]
            } else {
                let lane = (!session.is_empty()).then_some(session);
                let list = list("list_task_files", json!({"task_id": task, "limit": 500, "session_id": lane})).await?;
                items(&list, "files", |f| f["path"].as_str().map(str::to_owned))
            }
        }
        Fill::Artifact => {
            let list = list("list_artifacts", scoped(json!({"limit": 200}))).await?;
            items(&list, "artifacts", |a| a["artifact_id"].as_str().map(str::to_owned))
        }
        Fill::Workspace => {
            let list = list("list_workspaces", json!({})).await?;
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
    let mut seen = HashSet::new();
    values.retain(|v| seen.insert(v.clone()));
    Ok(Completed { values: values.into_iter().map(|v| format!("{prefix}{v}")).collect(), has_more })
}

/// What fills a template's variable.
fn template_fill(kind: Kind, variable: &str) -> Option<Fill> {
    Some(match (kind, variable) {
        (Kind::Help, "lang") => Fill::Lang,
        (Kind::Help, "slug") => Fill::HelpSlug,
        (Kind::TaskFile, "task_id") => Fill::Task,
        (Kind::TaskFile, "path") => Fill::File,
        (Kind::Artifact, "artifact_id") => Fill::Artifact,
        (Kind::Transcript | Kind::Result | Kind::SessionFile, "session_id") => Fill::Session,
        (Kind::SessionFile, "path") => Fill::File,
        _ => return None,
    })
}

fn items(list: &Value, key: &str, pick: impl Fn(&Value) -> Option<String>) -> Vec<String> {
    list[key].as_array().into_iter().flatten().filter_map(pick).collect()
}
