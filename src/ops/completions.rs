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
use crate::ops::agents::ListAgents;
use crate::ops::files::ListTaskFiles;
use crate::ops::sessions::ListSessions;
use crate::ops::sharing::ListArtifacts;
use crate::ops::tasks::ListTasks;
use crate::ops::workspaces::ListWorkspaces;
use crate::ops::{call, help_center};
use crate::rules::params::{param, Int};
use serde_json::Value;
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
    let workspace = Some(context("workspace")).filter(|w| !w.is_empty());
    let mut has_more = false;
    let candidates = match fill {
        Fill::Text => vec![],
        Fill::Agent | Fill::Agents => {
            let asked = ListAgents { workspace, limit: Some(const { Int::new(200) }), offset: None };
            let agents = run(call::list_agents(cx, asked)).await?;
            has_more |= agents.as_ref().is_some_and(|l| l.next_offset.is_some());
            let agents = agents.map(|l| l.agents).unwrap_or_default().into_iter();
            agents.map(|a| a.handle.map_or(a.id, |h| format!("@{}", h.trim_start_matches('@')))).collect()
        }
        Fill::Task => {
            let asked = ListTasks { workspace, limit: Some(const { Int::new(100) }), cursor: None };
            let tasks = run(call::list_tasks(cx, asked)).await?;
            has_more |= tasks.as_ref().is_some_and(|l| l.next_cursor.is_some());
            tasks.map(|l| l.tasks).unwrap_or_default().into_iter().map(|t| t.task.task_id).collect()
        }
        Fill::Session => {
            let asked = ListSessions { workspace, limit: Some(const { Int::new(100) }), cursor: None, agent_id: None };
            let sessions = run(call::list_sessions(cx, asked)).await?;
            has_more |= sessions.as_ref().is_some_and(|l| l.next_cursor.is_some());
            sessions.map(|l| l.sessions).unwrap_or_default().into_iter().map(|s| s.session_id).collect()
        }
        Fill::File => {
            // A task's base, or the folder as one session sees it.
            let session = context("session_id");
            let task = match session.as_str() {
                "" => context("task_id"),
                sid => run(resources::get_session(cx, sid)).await?.map(|s| s.session.task_id).unwrap_or_default(),
            };
            if task.is_empty() {
                vec![]
            } else {
                let lane = (!session.is_empty()).then_some(session);
                let asked = async {
                    let asked = ListTaskFiles {
                        task_id: param("task_id", &task)?,
                        limit: Some(const { Int::new(500) }),
                        cursor: None,
                        session_id: lane.as_deref().map(|l| param("session_id", l)).transpose()?,
                        workspace: None,
                    };
                    call::list_task_files(cx, asked).await
                };
                let files = run(asked).await?;
                has_more |= files.as_ref().is_some_and(|l| l.next_cursor.is_some());
                files.map(|l| l.files).unwrap_or_default().into_iter().map(|f| f.path).collect()
            }
        }
        Fill::Artifact => {
            let asked = ListArtifacts { workspace, limit: Some(const { Int::new(200) }), task_id: None };
            let artifacts = run(call::list_artifacts(cx, asked)).await?;
            artifacts.map(|l| l.artifacts).unwrap_or_default().into_iter().map(|a| a.artifact_id).collect()
        }
        Fill::Workspace => {
            let workspaces = run(call::list_workspaces(cx, ListWorkspaces {})).await?;
            workspaces.map(|l| l.workspaces).unwrap_or_default().into_iter().map(|w| w.slug).collect()
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
