//! The console's **Run locally** and **Deploy** buttons: the command a session taught with
//! `remember_command` (its task's `run` command, or a target's `deploy` command), run by the runner that
//! holds the session's turn, in its folder (a run command, with none, by any runner of the workspace in a
//! fresh checkout), with the output shown to the person who asked.

use crate::cx::Cx;
use crate::domain::jobs::{self, Asked};
use crate::domain::taskfs::PROJECT_FILE;
use crate::domain::taskfs::{self, Folder};
use crate::error::{ApiError, Code};
use crate::ops::sessions;
use crate::rules::ids::{ConnectorId, SessionId};
use crate::rules::params::words;
use crate::store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// How long a button's command may run before the runner stops it (a dev server is stopped too: its
/// output so far shows whether it came up).
const COMMAND_TIMEOUT_S: i64 = 60;
/// The output lines shown.
const TAIL_LINES: usize = jobs::KEPT_OUTPUT_LINES;

words! {
    /// A command a session teaches: the task's run command, or a target's deploy command.
    pub enum CommandKind { Run = "run", Deploy = "deploy" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCommand {
    /// The session (`ses_…`) whose runner runs it.
    pub session_id: SessionId,
    /// `run` (the task's run command) or `deploy` (a target's deploy command).
    pub kind: CommandKind,
    /// For `deploy`: the target (`con_…`) whose deploy command runs.
    pub target_id: Option<ConnectorId>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CommandRun {
    /// The command, as the session taught it.
    pub command: String,
    /// Its exit code; `null` when it did not finish (see `reason`).
    pub exit_code: Option<i64>,
    /// The last lines it printed.
    pub output: String,
    /// Why it did not run or finish, when it did not.
    pub reason: Option<String>,
}

/// The command a session taught for `kind`, if any.
pub async fn taught(
    cx: &Cx<'_>,
    session: &store::sessions::SessionRow,
    kind: &str,
    target_id: Option<&str>,
) -> Result<Option<String>, ApiError> {
    match kind {
        "run" => {
            let folder = Folder { workspace_id: &session.workspace_id, task_id: &session.task_id, lane: "" };
            let (db, blobs) = taskfs::parts(cx.env);
            let project = match taskfs::read(db, blobs, folder, PROJECT_FILE, None).await {
                Ok((_, text)) => serde_json::from_str::<Value>(&text).unwrap_or(Value::Null),
                Err(e) if e.code == Code::NotFound => Value::Null,
                Err(e) => return Err(e),
            };
            Ok(project["dev"]["command"].as_str().map(str::to_owned))
        }
        _ => {
            let Some(target) = target_id else { return Ok(None) };
            let c = store::connectors::get(cx.db(), target).await?;
            Ok(c.filter(|c| c.workspace_id == session.workspace_id).and_then(|c| c.deploy_command))
        }
    }
}

/// run_command
pub async fn run(cx: &Cx<'_>, p: RunCommand) -> Result<CommandRun, ApiError> {
    if p.kind == CommandKind::Deploy && p.target_id.is_none() {
        return Err(ApiError::invalid("`target_id` is required for kind `deploy`"));
    }
    let (session, _) = sessions::load(cx, &p.session_id).await?;
    let Some(command) = taught(cx, &session, p.kind.as_str(), p.target_id.as_deref()).await? else {
        return Err(ApiError::new(
            Code::NotFound,
            format!("no {} command is known yet: ask the session for one (ask_command), and it teaches it with remember_command", p.kind),
        ));
    };
    let spec = json!({ "command": command, "timeout_s": COMMAND_TIMEOUT_S });
    let wait_ms = (COMMAND_TIMEOUT_S + 30) * 1000;
    let mut answer = jobs::ask(cx, &session, "run", spec.clone(), wait_ms).await?;
    // No runner holds the session's turn: a run command runs on any runner of the workspace, in a fresh
    // checkout of the session's folder (a deploy needs the session's own runner, where its grants are).
    if matches!(answer, Asked::NoRunner) && p.kind == CommandKind::Run {
        answer = jobs::ask_checkout(cx, &session, spec, wait_ms).await?;
    }
    let (exit_code, output, reason) = match answer {
        Asked::Done(v) => {
            let tail = jobs::output_tail(v["output"].as_str().unwrap_or_default(), TAIL_LINES);
            let reason = match (v["exit_code"].as_i64(), v["timed_out"] == true) {
                (_, true) => Some(format!("stopped after {COMMAND_TIMEOUT_S} s")),
                (None, _) => Some(v["error"].as_str().unwrap_or("it did not finish").to_owned()),
                _ => None,
            };
            (v["exit_code"].as_i64(), tail, reason)
        }
        Asked::NoRunner => (
            None,
            String::new(),
            Some(match p.kind {
                CommandKind::Run => format!(
                    "no runner of the workspace is online: start one (`sky runner --server {} --key <key>`) and press the button again",
                    cx.base_url
                ),
                CommandKind::Deploy => {
                    "a deploy runs on the runner running this session, with its grants, and none is now: start `sky runner` and send the session a message first".into()
                }
            }),
        ),
        Asked::NoAnswer(why) => (None, String::new(), Some(why)),
    };
    Ok(CommandRun { command, exit_code, output, reason })
}
