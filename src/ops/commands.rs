//! The console's **Run locally** and **Deploy** buttons: the command a session taught with
//! `remember_command` (its task's `run` command, or a target's `deploy` command), run by the runner that
//! holds the session's turn, in its folder (a run command, with none, by any runner of the workspace in a
//! fresh checkout), with the output shown to the person who asked. A deploy pressed while no turn of the
//! session runs is asked of its agent in a new turn, where the grant is asked for or reused as for any
//! deploy. A command nobody taught yet is asked of the session's agent (`ask_command`).

use crate::cx::Cx;
use crate::domain::jobs;
use crate::domain::taskfs::PROJECT_FILE;
use crate::domain::taskfs::{self, Folder};
use crate::error::{ApiError, Code};
use crate::ops::sessions;
use crate::rules::harness::Harness;
use crate::rules::ids::{ConnectorId, SessionId};
use crate::rules::params::words;
use crate::store;
use agentsky_wire::runner::{JobKind, JobSpec, RunResult};
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
    /// A deploy pressed while no turn of the session ran: the message that asked its agent to deploy in a
    /// new turn. Its output shows in the session (`read_session` from this message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asked_message_id: Option<String>,
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
    let spec =
        JobSpec { command: Some(command.clone()), timeout_s: Some(COMMAND_TIMEOUT_S as u64), ..JobSpec::default() };
    let wait_ms = (COMMAND_TIMEOUT_S + 30) * 1000;
    let mut answer = jobs::ask(cx, &session, JobKind::Run, &spec, wait_ms).await?;
    // No runner holds the session's turn: a run command runs on any runner of the workspace, in a fresh
    // checkout of the session's folder (a deploy needs the session's own runner, where its grants are).
    if matches!(answer, jobs::Asked::NoRunner) && p.kind == CommandKind::Run {
        answer = jobs::ask_checkout(cx, &session, &spec, wait_ms).await?;
    }
    if let (jobs::Asked::NoRunner, CommandKind::Deploy, Some(target)) = (&answer, p.kind, p.target_id.as_deref()) {
        return deploy_in_a_turn(cx, &session, command, target).await;
    }
    let (exit_code, output, reason) = match answer.read::<RunResult>() {
        jobs::Asked::Done(r) => {
            let tail = jobs::output_tail(&r.output, TAIL_LINES);
            let reason = match (r.exit_code, r.timed_out) {
                (_, true) => Some(format!("stopped after {COMMAND_TIMEOUT_S} s")),
                (None, _) => Some(r.error.unwrap_or_else(|| "it did not finish".to_owned())),
                _ => None,
            };
            (r.exit_code, tail, reason)
        }
        jobs::Asked::NoRunner => (
            None,
            String::new(),
            Some(format!(
                "no runner of the workspace is online: start one (`sky runner --server {} --key <key>`) and press the button again",
                cx.base_url
            )),
        ),
        jobs::Asked::NoAnswer(why) => (None, String::new(), Some(why)),
    };
    Ok(CommandRun { command, exit_code, output, reason, asked_message_id: None })
}

/// A deploy pressed while no turn of the session runs: its agent is asked, in a new turn, to run the taught
/// command; there the provider CLI asks for a deploy grant (or uses the active one) as any deploy does. An
/// agent that runs no commands (echo, openai) is not asked.
async fn deploy_in_a_turn(
    cx: &Cx<'_>,
    session: &store::sessions::SessionRow,
    command: String,
    target_id: &str,
) -> Result<CommandRun, ApiError> {
    let refused = |reason: String| CommandRun {
        command: command.clone(),
        exit_code: None,
        output: String::new(),
        reason: Some(reason),
        asked_message_id: None,
    };
    if !Harness::from_word(&session.harness).is_some_and(Harness::on_runner) {
        return Ok(refused(format!(
            "this session's agent ({} harness) runs no commands: press Deploy on a session of a runner, claude-code or codex agent",
            session.harness
        )));
    }
    let target = store::connectors::get(cx.db(), target_id).await?.map_or_else(|| target_id.to_owned(), |c| c.name);
    let message = format!(
        "Deploy now: the person pressed Deploy to `{target}`. Run `{command}` from the project root (the provider CLI gets its credential through agentsky, asking for a deploy grant if none is active) and say what it printed."
    );
    let send: sessions::SendMessage = crate::rules::params::decode(json!({
        "session_id": session.session_id, "message": message,
        // Pressed twice within the minute, it is asked once.
        "idempotency_key": format!("deploy-{}-{target_id}-{}", session.session_id, cx.now_ms / 60_000),
    }))
    .map_err(ApiError::cause)?;
    let sent = sessions::send(cx, send).await?;
    let mut asked = refused(
        "no turn of this session was running to deploy on, so its agent was asked to deploy in a new turn: its output shows in the session".into(),
    );
    asked.asked_message_id = Some(sent.message_id);
    Ok(asked)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskCommand {
    /// The session.
    pub session_id: SessionId,
    /// `run` (the Run locally button) or `deploy` (the Deploy button): the session may then teach it with
    /// `remember_command`.
    pub kind: CommandKind,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Asked {
    pub session_id: String,
    pub kind: String,
    /// The session started in the same task, with the same agent, to work the command out: read it with
    /// `read_session`; the command it teaches (`remember_command`) is the task's.
    pub asked_session_id: String,
    /// Its first message: the question.
    pub message_id: String,
    pub cursor: String,
}

/// What the agent is asked.
fn command_question(kind: CommandKind) -> &'static str {
    match kind {
        CommandKind::Run => {
            "agentsky asks: work out how to run this project locally: the command that starts it, and the URL it serves if it serves one. Try it, then call remember_command with kind `run`, the command and its url. If you cannot run commands here, tell the user the command instead."
        }
        CommandKind::Deploy => {
            "agentsky asks: work out the command that deploys this project to one of its targets (list_targets). Ask for a deploy grant on that target (request_access), run the provider's CLI command, and once it succeeded call remember_command with kind `deploy`, that exact command and the targetId. If you cannot run commands here, tell the user the command instead."
        }
    }
}

/// POST /v1/sessions/{session_id}/ask: a session of the same task and agent is started to work the
/// command out (the person's own session keeps what it was doing); any session of the task may then teach
/// it. Asking again within the minute is the same ask.
pub async fn ask_command(cx: &Cx<'_>, p: AskCommand) -> Result<Asked, ApiError> {
    let (row, _) = sessions::load(cx, &p.session_id).await?;
    let kind = p.kind.as_str();
    store::lanes::ask(cx.db(), &row.session_id, kind).await?;
    let start: sessions::StartSession = crate::rules::params::decode(json!({
        "agent_id": row.agent_id, "task_id": row.task_id, "message": command_question(p.kind),
        "idempotency_key": format!("ask-{kind}-{}-{}", row.session_id, cx.now_ms / 60_000),
    }))
    .map_err(ApiError::cause)?;
    let started = sessions::start(cx, start).await?;
    store::lanes::ask(cx.db(), &started.session.session_id, kind).await?;
    Ok(Asked {
        session_id: row.session_id,
        kind: kind.to_owned(),
        asked_session_id: started.session.session_id,
        message_id: started.message_id,
        cursor: started.cursor,
    })
}
