//! `land`'s last step: pushing the base as it now is to the task's git remote (`set_task_remote`), through
//! the runner of the landing session, with the session's grant on the remote's connector.
//!
//! The runner builds one commit whose tree is the task's base and whose parent is the commit agentsky last
//! pushed there (the branch's head at the first push), and pushes it without force: a branch someone else
//! moved since is a non-fast-forward push, refused and reported, never overwritten. A push that fails
//! leaves the landing in place; the next `land` pushes the base as it is then.

use super::{CallingSession, ToolError};
use crate::domain::grants::{covers, live};
use crate::domain::jobs::{self, Asked};
use crate::rules::git_remote;
use crate::store;
use agentsky_wire::runner::{JobKind, JobSpec, PushResult};

/// How long `land` waits for the runner's push.
const PUSH_WAIT_MS: i64 = 180_000;

/// What the push step ended with.
pub struct Pushed {
    pub pushed: bool,
    /// The remote branch's new head.
    pub head: Option<String>,
    /// Why nothing was pushed, when a remote is set.
    pub reason: Option<String>,
}

impl Pushed {
    fn not(reason: String, steps: &mut Vec<String>) -> Self {
        steps.push(format!("push: not pushed: {reason}"));
        Self { pushed: false, head: None, reason: Some(reason) }
    }
}

/// Pushes the landed `commit` (whose record is `message`) to the task's remote, if it has one.
pub async fn push(
    a: &CallingSession<'_>,
    commit: &str,
    message: &str,
    steps: &mut Vec<String>,
) -> Result<Pushed, ToolError> {
    let (cx, me) = (a.cx, &a.me);
    let db = cx.db();
    let Some(remote) = store::remotes::get(db, &me.task_id).await? else {
        steps.push("push: the task's base folder is the record; no remote is configured".into());
        return Ok(Pushed { pushed: false, head: None, reason: None });
    };
    let later = "the work is landed in the base; the next land pushes the base as it is then";
    // Checked again here: the connector (its provider) may have changed since the remote was set.
    let connector = store::connectors::get(db, &remote.connector_id).await?;
    let bound = match &connector {
        Some(c) if c.workspace_id == me.workspace_id => git_remote::bound("url", &remote.url, &c.provider),
        _ => Err("the remote's connector no longer exists".into()),
    };
    if let Err(why) = bound {
        return Ok(Pushed::not(format!("the remote {} is not pushed to: {why}; {later}", remote.url), steps));
    }
    let grants = store::requests::grants_for_session(db, &me.workspace_id, &me.session_id).await?;
    let grant = grants
        .iter()
        .rev()
        .find(|g| g.connector_id == remote.connector_id && live(g, cx.now_ms) && covers(g, &["write"]));
    let Some(grant) = grant else {
        let name = connector.map_or(remote.connector_id.clone(), |c| c.name);
        return Ok(Pushed::not(
            format!(
                "pushing to {} needs a live grant on `{name}` covering `write`, and this session has none; ask for it with request_access, then land again ({later})",
                remote.url
            ),
            steps,
        ));
    };
    let spec = JobSpec {
        url: Some(remote.url.clone()),
        branch: Some(remote.branch.clone()),
        grant_id: Some(grant.grant_id.clone()),
        message: Some(format!("{message}\n\nagentsky commit {commit}")),
        expected_head: remote.pushed_head.clone(),
        ..JobSpec::default()
    };
    match jobs::ask(cx, me, JobKind::Push, &spec, PUSH_WAIT_MS).await?.read::<PushResult>() {
        Asked::Done(r) if r.ok => {
            let Some(head) = r.head.as_deref().filter(|h| h.len() >= 40 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            else {
                return Ok(Pushed::not("the runner reported a push without the remote's new head".into(), steps));
            };
            store::remotes::pushed(db, &me.task_id, &remote.url, &remote.branch, head, cx.now_ms).await?;
            steps.push(format!("push: {} on {} is now at {head}", remote.branch, remote.url));
            Ok(Pushed { pushed: true, head: Some(head.to_owned()), reason: None })
        }
        Asked::Done(r) => {
            let why = r.error.as_deref().unwrap_or("the runner gave no reason");
            Ok(Pushed::not(format!("the push to {} ({}) failed: {why}; {later}", remote.url, remote.branch), steps))
        }
        Asked::NoRunner => {
            Ok(Pushed::not(format!("no runner is running this session to push to {}; {later}", remote.url), steps))
        }
        Asked::NoAnswer(why) => {
            Ok(Pushed::not(format!("the push to {} got no answer: {why}; {later}", remote.url), steps))
        }
    }
}
