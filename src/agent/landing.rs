//! Landing work: `remember_command` (the commands agentsky asked this session for) and `land` (merge the
//! base into the lane three ways, run the checks — on the session's runner or any other of the workspace,
//! never skipped — and merge into the base with the summary as the record).

use super::{CallingSession, ToolError, ACCESS_PER_MIN, QUESTIONS_PER_MIN};
use crate::domain::jobs::{self, Asked};
use crate::domain::lanemerge::{self, Lane};
use crate::domain::taskfs::{self, Folder, Writer, PROJECT_FILE};
use crate::error::ApiError;
use crate::rules::params::{words, Text};
use crate::rules::{argv, redact};
use crate::store;
use agentsky_wire::runner::{JobKind, JobSpec, RunResult, SyncResult};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

/// How long `land` waits for the runner to bring its working folder into the lane.
const SYNC_WAIT_MS: i64 = 120_000;
/// How long the checks may run.
const CHECKS_TIMEOUT_S: i64 = 600;
/// How much of failing checks' output `land` shows.
const CHECKS_TAIL_LINES: usize = 30;

words! {
    /// Which command a session remembers for the task.
    pub enum LandingKind { Run = "run", Deploy = "deploy", Checks = "checks" }
}

words! {
    /// Where a `run` command's app runs.
    pub enum Platform { Web = "web", Ios = "ios", Android = "android" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct RememberCommand {
    /// `run`, `deploy` or `checks` (the command that proves the work is good: typecheck, tests, lint).
    pub kind: LandingKind,
    /// 1–2000 characters. The exact command, run from the project root.
    pub command: Text<1, 2_000>,
    /// For `deploy`: a target `id` from `list_targets`, in this project.
    pub target_id: Option<crate::rules::ids::ConnectorId>,
    /// `run` only. The local URL the server answers on. Up to 500 characters.
    pub url: Option<Text<0, 500>>,
    /// `run` only: `web`, `ios` or `android`. Leave it out for a web server.
    pub platform: Option<Platform>,
    /// `run` on `ios` or `android`: simulator or emulator name. Up to 120 characters.
    pub device: Option<Text<0, 120>>,
    /// `run` on `ios` or `android`: bundle id or package. Up to 200 characters.
    pub app_id: Option<Text<0, 200>>,
    /// Up to 200 characters.
    pub note: Option<Text<0, 200>>,
}

fn is_local_url(url: &str) -> bool {
    ["http://localhost", "https://localhost", "http://127.0.0.1", "https://127.0.0.1", "http://[::1]", "https://[::1]"]
        .iter()
        .any(|p| url.strip_prefix(p).is_some_and(|r| r.is_empty() || r.starts_with(':') || r.starts_with('/')))
}

async fn read_project(a: &CallingSession<'_>) -> Result<Value, ToolError> {
    let folder = Folder { workspace_id: &a.me.workspace_id, task_id: &a.me.task_id, lane: "" };
    let (db, blobs) = taskfs::parts(a.cx.env);
    match taskfs::read(db, blobs, folder, PROJECT_FILE, None).await {
        Ok((_, text)) => Ok(serde_json::from_str(&text).unwrap_or_else(|_| json!({}))),
        Err(e) if e.code == crate::error::Code::NotFound => Ok(json!({})),
        Err(e) => Err(e.into()),
    }
}

async fn write_project(a: &CallingSession<'_>, project: &Value) -> Result<(), ToolError> {
    let folder = Folder { workspace_id: &a.me.workspace_id, task_id: &a.me.task_id, lane: "" };
    let (db, blobs) = taskfs::parts(a.cx.env);
    let text = serde_json::to_string_pretty(project).map_err(ApiError::cause)? + "\n";
    taskfs::write(db, blobs, folder, PROJECT_FILE, &text, Writer::Session(&a.me.session_id), a.cx.now_ms).await?;
    Ok(())
}

/// remember_command
pub async fn remember_command(a: &CallingSession<'_>, p: RememberCommand) -> Result<Value, ToolError> {
    if p.kind != LandingKind::Run
        && (p.url.is_some() || p.platform.is_some() || p.device.is_some() || p.app_id.is_some())
    {
        return Err(ToolError::invalid("`url`, `platform`, `device` and `appId` are for kind `run` only"));
    }
    // An answer to agentsky's own question: the questions bucket, not the access requests'.
    a.bucket("questions", QUESTIONS_PER_MIN, "questions").await?;
    let db = a.cx.db();
    let state = store::lanes::lane_state(db, &a.me.session_id).await?.ok_or_else(|| a.internal("no lane state"))?;
    // The commands are the task's: once agentsky asked any of its sessions (`land` for the checks, the Run
    // locally and Deploy buttons for the others), any of them may teach it.
    let asked = state.asked.split(' ').any(|k| k == p.kind.as_str())
        || store::lanes::asked_in_task(db, &a.me.task_id, p.kind.as_str()).await?;
    if !asked {
        return Err(ToolError::refused(format!(
            "agentsky did not ask this task for a `{}` command; give the command to the user instead",
            p.kind
        )));
    }
    if redact::has_secret(&p.command) {
        return Err(ToolError::refused(
            "the command looks like it contains a secret; refused. Use a grant (the provider CLI picks it up) and give the user the command without it",
        ));
    }
    let mut project = read_project(a).await?;
    match p.kind {
        LandingKind::Run => {
            let mut dev = json!({ "command": p.command });
            if let Some(url) = p.url.as_deref().filter(|u| is_local_url(u)) {
                dev["url"] = json!(url);
            }
            let platform = p.platform.map(Platform::as_str);
            for (k, v) in [
                ("platform", platform),
                ("device", p.device.as_deref()),
                ("appId", p.app_id.as_deref()),
                ("note", p.note.as_deref()),
            ] {
                if let Some(v) = v {
                    dev[k] = json!(v);
                }
            }
            project["dev"] = dev;
            write_project(a, &project).await?;
        }
        LandingKind::Checks => {
            project["checks"] = json!({ "command": p.command });
            write_project(a, &project).await?;
        }
        LandingKind::Deploy => {
            let target =
                p.target_id.as_deref().ok_or_else(|| ToolError::invalid("`targetId` is required for kind `deploy`"))?;
            let c = store::connectors::get(db, target).await?;
            let c = c
                .filter(|c| c.workspace_id == a.me.workspace_id)
                .ok_or_else(|| ToolError::unknown(format!("no target `{target}` in this project")))?;
            // A deploy command needs proof: the runner of this session's turn ran exactly this command under a
            // live grant covering deploy on the target and saw it exit 0 (`crate::runner::granted`).
            let words = argv::split(&p.command).filter(|w| !w.is_empty()).ok_or_else(|| {
                ToolError::invalid(
                    "a deploy command is one plain command (no `;`, `&&`, pipes, redirections, `$` or globs): the provider CLI command that deployed",
                )
            })?;
            let proven =
                store::proofs::exists(db, &a.me.session_id, &c.connector_id, &argv::fingerprint(&words)).await?;
            if !proven {
                return Err(ToolError::refused(format!(
                    "a deploy command is accepted only once this task's runner has run exactly that command (through the provider CLI's shim) under a grant covering deploy on `{}` and seen it exit with 0; run it, then remember the same command",
                    c.name
                )));
            }
            store::connectors::set_deploy_command(db, &c.connector_id, &p.command).await?;
        }
    }
    Ok(json!({ "ok": true }))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Land {
    /// 1–2000 characters. The first line (cut at 120 characters) is the record's subject; any further
    /// lines become its body.
    pub summary: Text<1, 2_000>,
}

fn refused(reason: String, steps: Vec<String>) -> Value {
    json!({ "landed": false, "commit": null, "pushed": false, "steps": steps, "reason": reason })
}

/// land
pub async fn land(a: &CallingSession<'_>, p: Land) -> Result<Value, ToolError> {
    let (cx, me) = (a.cx, &a.me);
    let db = cx.db();
    let settings = store::lanes::settings(db, &me.task_id).await?.ok_or_else(|| a.internal("no task"))?;
    if !settings.lanes {
        return Ok(refused(
            "this task works in the project folder rather than its own lane: its writes are already in the base".into(),
            vec![],
        ));
    }
    if settings.review == "manual" {
        return Ok(refused(
            "the project is set to \"I review and merge myself\": tell the user the work is ready".into(),
            vec![],
        ));
    }
    let mut steps = Vec::new();
    // A runner's turn keeps its work in the runner's folder until the turn ends: bring it into the lane now,
    // and the base's newer files into that folder.
    if let Some(stop) = sync(a, &mut steps, "commit the runner's working folder").await? {
        return Ok(stop);
    }
    if store::lanes::changes(db, &me.task_id, &me.session_id).await?.is_empty() {
        return Ok(refused("there is nothing to land: this lane has no changes against the base".into(), steps));
    }
    // What is missing is said before anything runs, and costs no access request: a first landing asks for
    // the checks, is taught them, and lands, in three calls.
    let project = read_project(a).await?;
    let Some(cmd) = project["checks"]["command"].as_str().map(str::to_owned) else {
        store::lanes::ask(db, &me.session_id, "checks").await?;
        steps.push("checks: none known".into());
        return Ok(refused(no_checks_known(a).await?, steps));
    };
    // Merging and running the checks is what the access bucket limits.
    a.bucket("access", ACCESS_PER_MIN, "access requests").await?;
    let (blobs, lane) = (
        cx.env.blobs.as_ref(),
        Lane { workspace_id: &me.workspace_id, task_id: &me.task_id, session_id: &me.session_id },
    );
    let merged = lanemerge::merge_base_into(db, blobs, lane, cx.now_ms).await?;
    if !merged.conflicts.is_empty() {
        let files: Vec<&str> = merged.conflicts.iter().map(|c| c.path.as_str()).collect();
        steps.push(format!("merge base into lane: conflict in {}", files.join(", ")));
        let mut out = refused(
            format!(
                "conflict: {} changed both in this lane and in the base since the lane last merged it; `conflicts` lists the regions (the lane's and the base's lines). Read the base's version and the merge base's in project_activity's `merging` (each file's `base` and `mergeBase`), write the reconciled file in the lane (for a file deleted on one side: write it to keep it, or delete it again to keep the delete) and call land again",
                files.join(", ")
            ),
            steps,
        );
        out["conflicts"] = json!(merged.conflicts);
        return Ok(out);
    }
    steps.push(match (merged.commits, merged.written.len()) {
        (0, _) => "merge base into lane: already up to date".into(),
        (n, 0) => format!("merge base into lane: clean ({n} new base commit(s))"),
        (n, _) => format!("merge base into lane: clean ({n} new base commit(s); merged {})", merged.written.join(", ")),
    });
    if !merged.written.is_empty() {
        if let Some(stop) = sync(a, &mut steps, "bring the merged files into the runner's working folder").await? {
            return Ok(stop);
        }
    }
    let changes = store::lanes::changes(db, &me.task_id, &me.session_id).await?;
    if changes.is_empty() {
        return Ok(refused("there is nothing to land: once merged, this lane holds what the base holds".into(), steps));
    }
    if changes.len() > store::lanes::LAND_FILES_MAX {
        return Ok(refused(
            format!(
                "this lane changes more than {} files, the most one landing writes: land part of the work (restore the other files to the base's version in this lane), then the rest",
                store::lanes::LAND_FILES_MAX
            ),
            steps,
        ));
    }
    if let Some(stop) = checks(a, &cmd, &mut steps).await? {
        return Ok(stop);
    }
    // What was checked is what lands: the lane and the base must not have moved meanwhile.
    let now_changes = store::lanes::changes(db, &me.task_id, &me.session_id).await?;
    let shas =
        |c: &[store::lanes::LaneChange]| c.iter().map(|c| (c.path.clone(), c.lane_sha.clone())).collect::<Vec<_>>();
    if shas(&now_changes) != shas(&changes) || store::lanes::head(db, &me.task_id).await? != merged.head {
        return Ok(refused(
            "the lane or the base changed while the checks ran: call land again to merge and check what is there now"
                .into(),
            steps,
        ));
    }
    let mut lines = p.summary.lines();
    let subject: String = lines.next().unwrap_or_default().chars().take(120).collect();
    let body = lines.collect::<Vec<_>>().join("\n").trim().to_owned();
    let commit = taskfs::commit_id();
    let landing = store::lanes::Landing {
        task_id: &me.task_id,
        workspace_id: &me.workspace_id,
        session_id: &me.session_id,
        commit_id: &commit,
        subject: &subject,
        body: &body,
        changes: &changes,
        head: merged.head,
        now_ms: cx.now_ms,
    };
    if store::lanes::land(db, &landing).await?.is_none() {
        return Ok(refused("the base moved while landing: call land again".into(), steps));
    }
    let deleted: Vec<&str> = changes.iter().filter(|c| c.deleted).map(|c| c.path.as_str()).collect();
    steps.push(match deleted.len() {
        0 => format!("merge into base: {} file(s) as {commit}", changes.len()),
        _ => format!("merge into base: {} file(s) as {commit}, deleting {}", changes.len(), deleted.join(", ")),
    });
    let pushed = super::pushing::push(a, &commit, &p.summary, &mut steps).await?;
    Ok(json!({
        "landed": true, "commit": commit, "pushed": pushed.pushed, "remoteHead": pushed.head, "steps": steps,
        "reason": pushed.reason,
    }))
}

/// Asks the session's runner, if it has one, to sync its working folder with the lane; a refusal when
/// that failed.
async fn sync(a: &CallingSession<'_>, steps: &mut Vec<String>, what: &str) -> Result<Option<Value>, ToolError> {
    match jobs::ask(a.cx, &a.me, JobKind::Sync, &JobSpec::default(), SYNC_WAIT_MS).await?.read::<SyncResult>() {
        Asked::NoRunner => Ok(None),
        Asked::Done(r) if r.ok => {
            let count = |paths: &Option<Vec<String>>| paths.as_ref().map_or(0, Vec::len);
            let mut said = format!(
                "{what}: {} file(s) uploaded, {} refreshed from the lane",
                count(&r.uploaded),
                count(&r.refreshed)
            );
            // Older runners do not report deletes.
            for (n, how) in [(count(&r.deleted), "deleted"), (count(&r.removed), "removed as the lane deleted them")] {
                if n > 0 {
                    said.push_str(&format!(", {n} {how}"));
                }
            }
            steps.push(said);
            Ok(None)
        }
        Asked::Done(r) => {
            let why = r.error.as_deref().unwrap_or("no reason given");
            Ok(Some(refused(format!("the runner could not sync this session's work: {why}"), steps.clone())))
        }
        Asked::NoAnswer(why) => Ok(Some(refused(format!("the work could not be collected: {why}"), steps.clone()))),
    }
}

/// Runs the checks: on the runner holding this session's turn, or else on any online runner of the
/// workspace in a fresh checkout of the lane; never skipped. A refusal unless they passed.
/// Why `land` stops when the project's checks are unknown, and what would run them once taught: the
/// runner of this turn, or any runner of the workspace; with none online, who could.
async fn no_checks_known(a: &CallingSession<'_>) -> Result<String, ToolError> {
    let ask = "no checks are known for this project yet: work out the command that proves the work is good (typecheck, tests, lint), call remember_command with kind `checks`, then call land again";
    let since = a.cx.clock_now() - jobs::ONLINE_MS;
    let sandboxed = a.cx.env.sandboxes.available().is_ok();
    if sandboxed || store::runners::online(a.cx.db(), &a.me.workspace_id, since).await? > 0 {
        return Ok(ask.to_owned());
    }
    Ok(format!(
        "{ask}. The checks run on a `sky runner` of the workspace, and none is online: the user starts one on a machine with the project's tools (`sky runner --server {} --key <key>`, which also runs agents with the harness `runner`, `claude-code` or `codex`) before the next land",
        a.cx.base_url
    ))
}

async fn checks(a: &CallingSession<'_>, cmd: &str, steps: &mut Vec<String>) -> Result<Option<Value>, ToolError> {
    let spec =
        JobSpec { command: Some(cmd.to_owned()), timeout_s: Some(CHECKS_TIMEOUT_S as u64), ..JobSpec::default() };
    let wait_ms = (CHECKS_TIMEOUT_S + 30) * 1000;
    let (mut asked, mut place) = (jobs::ask(a.cx, &a.me, JobKind::Run, &spec, wait_ms).await?, "");
    if matches!(asked, Asked::NoRunner) {
        asked = jobs::ask_checkout(a.cx, &a.me, &spec, wait_ms).await?;
        place = " on another runner of the workspace, in a fresh checkout of the lane";
    }
    // With no runner online, where the deployment runs hosted sandboxes: in the session's own.
    if matches!(asked, Asked::NoRunner) && a.cx.env.sandboxes.available().is_ok() {
        asked = jobs::ask_checkout_in_sandbox(a.cx, &a.me, &spec, wait_ms).await?;
        place = " in the session's hosted sandbox, in a fresh checkout of the lane";
    }
    let r = match asked.read::<RunResult>() {
        Asked::NoRunner => {
            steps.push(format!("checks: `{cmd}` not run: no runner of the workspace is online"));
            return Ok(Some(refused(
                format!(
                    "the checks (`{cmd}`) must pass before landing, and no runner of the workspace is online to run them: ask the user to start `sky runner` on a machine of this workspace, then call land again"
                ),
                steps.clone(),
            )));
        }
        Asked::NoAnswer(why) => {
            steps.push(format!("checks: `{cmd}` not run: {why}"));
            return Ok(Some(refused(format!("the checks could not be run: {why}"), steps.clone())));
        }
        Asked::Done(r) => r,
    };
    if r.exit_code == Some(0) {
        steps.push(format!("checks: `{cmd}` passed (exit 0){place}"));
        return Ok(None);
    }
    let how = match r.exit_code {
        _ if r.timed_out => format!("timed out after {CHECKS_TIMEOUT_S} s"),
        Some(code) => format!("exited {code}"),
        None => match r.error.as_deref() {
            Some(why) => format!("did not finish ({why})"),
            None => "did not finish".into(),
        },
    };
    steps.push(format!("checks: `{cmd}` {how}{place}"));
    let tail = jobs::output_tail(&r.output, CHECKS_TAIL_LINES);
    if !tail.is_empty() {
        steps.push(format!("checks output (last lines):\n{tail}"));
    }
    Ok(Some(refused(
        format!("the checks failed: `{cmd}` {how}; fix what they report and call land again"),
        steps.clone(),
    )))
}
