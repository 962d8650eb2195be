//! The other tasks of the project: `list_sessions`, `project_activity`, `send_message`.

use super::{CallingSession, ToolError, MESSAGES_PER_MIN};
use crate::domain::taskfs::{self, Folder};
use crate::rules::ids;
use crate::rules::ids::SessionId;
use crate::rules::params::Text;
use crate::session::{calls, Author, NewMessage};
use crate::store::lanes::TaskSettings;
use crate::store::{
    self,
    sessions::{SessionRow, SessionStatus},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The branch name a session's lane shows as: its lane's, or the base's without lanes.
fn branch(s: &SessionRow, settings: &TaskSettings) -> String {
    if settings.lanes {
        format!("lane/{}", s.session_id)
    } else {
        settings.base_branch.clone()
    }
}

/// A peer, the files its lane changed, and how many base commits its lane has not merged.
struct Peer {
    row: SessionRow,
    files: Vec<String>,
    behind: i64,
}

async fn peers(a: &CallingSession<'_>) -> Result<(Vec<Peer>, TaskSettings), ToolError> {
    let db = a.cx.db();
    let settings = store::lanes::settings(db, &a.me.task_id).await?.ok_or_else(|| a.internal("no task"))?;
    let lanes = settings.lanes;
    let head = store::lanes::head(db, &a.me.task_id).await?;
    let mut out = Vec::new();
    for row in store::sessions::in_task(db, &a.me.task_id).await? {
        if row.status == SessionStatus::Terminated {
            continue;
        }
        let (files, behind) = if lanes {
            let files =
                store::lanes::changes(db, &a.me.task_id, &row.session_id).await?.into_iter().map(|c| c.path).collect();
            let merged = store::lanes::lane_state(db, &row.session_id).await?.map_or(head, |s| s.lane_base_seq);
            (files, (head - merged).max(0))
        } else {
            (vec![], 0)
        };
        out.push(Peer { row, files, behind });
    }
    Ok((out, settings))
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionItem {
    pub session_id: String,
    pub agent: String,
    pub branch: String,
    pub state: SessionStatus,
    pub note: String,
    #[serde(rename = "self")]
    pub is_self: bool,
    pub task: String,
    pub files: Vec<String>,
    pub overlaps_with_you: Vec<String>,
    /// How many base commits its lane has not merged.
    pub behind: i64,
}

/// list_sessions
pub async fn list_sessions(a: &CallingSession<'_>) -> Result<Vec<SessionItem>, ToolError> {
    let (all, settings) = peers(a).await?;
    let mine: Vec<String> =
        all.iter().find(|p| p.row.session_id == a.me.session_id).map(|p| p.files.clone()).unwrap_or_default();
    Ok(all
        .into_iter()
        .map(|p| {
            let is_self = p.row.session_id == a.me.session_id;
            let overlaps =
                if is_self { vec![] } else { p.files.iter().filter(|f| mine.contains(f)).cloned().collect() };
            SessionItem {
                branch: branch(&p.row, &settings),
                session_id: p.row.session_id,
                agent: p.row.agent_name,
                state: p.row.status,
                note: p.row.note,
                is_self,
                task: p.row.title,
                files: p.files,
                overlaps_with_you: overlaps,
                behind: p.behind,
            }
        })
        .collect())
}

/// project_activity
pub async fn project_activity(a: &CallingSession<'_>) -> Result<Value, ToolError> {
    let (all, settings) = peers(a).await?;
    let db = a.cx.db();
    let state = store::lanes::lane_state(db, &a.me.session_id).await?.ok_or_else(|| a.internal("no lane"))?;
    let commits = store::lanes::commits_after(db, &a.me.task_id, state.lane_base_seq).await?;
    let behind = all.iter().find(|p| p.row.session_id == a.me.session_id).map_or(commits.len() as i64, |p| p.behind);
    let merging = merging(a, &state).await?;
    let by_id = |id: &Option<String>| all.iter().find(|p| Some(&p.row.session_id) == id.as_ref());
    let base_commits: Vec<Value> = commits
        .iter()
        .map(|c| {
            let lane = by_id(&c.session_id)
                .map(|p| json!({ "agent": p.row.agent_name, "branch": branch(&p.row, &settings), "task": p.row.title }))
                .unwrap_or(Value::Null);
            json!({ "sha": c.commit_id, "subject": c.subject, "when": c.created_ms, "files": c.files, "lane": lane })
        })
        .collect();
    let mine: Vec<String> =
        all.iter().find(|p| p.row.session_id == a.me.session_id).map(|p| p.files.clone()).unwrap_or_default();
    let others: Vec<&Peer> = all.iter().filter(|p| p.row.session_id != a.me.session_id).collect();
    let lanes_view: Vec<Value> = others
        .iter()
        .map(|p| {
            json!({ "sessionId": p.row.session_id, "agent": p.row.agent_name, "branch": branch(&p.row, &settings),
                          "state": p.row.status, "task": p.row.title, "files": p.files })
        })
        .collect();
    let mut overlaps = Vec::new();
    for file in &mine {
        for p in others.iter().filter(|p| p.files.contains(file)) {
            overlaps.push(json!({ "file": file, "with": { "sessionId": p.row.session_id, "agent": p.row.agent_name,
                "branch": branch(&p.row, &settings), "task": p.row.title } }));
        }
    }
    Ok(
        json!({ "base": settings.base_branch, "behind": behind, "baseCommits": base_commits, "lanes": lanes_view, "overlaps": overlaps,
                "merging": merging }),
    )
}

/// How much of each version `merging` shows.
const MERGING_TEXT_CHARS: usize = 64 * 1024;

/// The files of a merge `land` stopped on conflicts that the lane has not written since: the base's
/// version and the merge base's, to reconcile with the lane's own.
async fn merging(a: &CallingSession<'_>, state: &store::lanes::LaneState) -> Result<Vec<Value>, ToolError> {
    let Some(m) = &state.lane_merging else { return Ok(vec![]) };
    let (db, blobs) = taskfs::parts(a.cx.env);
    let lane = Folder { workspace_id: &a.me.workspace_id, task_id: &a.me.task_id, lane: &a.me.session_id };
    let mut out = Vec::new();
    for (path, pending) in &m.files {
        let own = store::files::get(db, &a.me.task_id, &a.me.session_id, path, None).await?;
        if own.is_some_and(|f| f.version > pending.version) {
            continue;
        }
        let mut entry = json!({ "file": path });
        for (key, at) in [("base", taskfs::At::Base), ("mergeBase", taskfs::At::MergeBase)] {
            entry[key] = match taskfs::read_at(db, blobs, lane, path, at).await {
                Ok((info, text)) => {
                    let cut = text.char_indices().nth(MERGING_TEXT_CHARS).map(|(i, _)| i);
                    json!({ "version": info.version, "content": &text[..cut.unwrap_or(text.len())], "cut": cut.is_some() })
                }
                Err(e) if e.code == crate::error::Code::NotFound => Value::Null,
                Err(e) => return Err(e.into()),
            };
        }
        out.push(entry);
    }
    Ok(out)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessage {
    /// A `sessionId` from `list_sessions`.
    pub to: SessionId,
    /// Plain text, 1–4000 characters.
    pub body: Text<1, 4_000>,
}

/// send_message
pub async fn send_message(a: &CallingSession<'_>, p: SendMessage) -> Result<Value, ToolError> {
    if p.to == a.me.session_id {
        return Err(ToolError::invalid("`to` is you: send to a peer from list_sessions"));
    }
    a.bucket("messages", MESSAGES_PER_MIN, "messages").await?;
    let db = a.cx.db();
    let peer = store::sessions::get(db, &p.to)
        .await?
        .filter(|s| s.task_id == a.me.task_id)
        .ok_or_else(|| ToolError::unknown(format!("no session `{}` in this project; call list_sessions", p.to)))?;
    if peer.status == SessionStatus::Terminated {
        return Err(ToolError::refused(format!("session `{}` has ended", p.to)));
    }
    let message = NewMessage {
        message_id: ids::new_id("msg"),
        text: p.body.into_string(),
        from: Author::Peer { session_id: a.me.session_id.clone() },
    };
    crate::domain::sessions::call(a.cx, &peer.session_id, calls::Note { message }).await.map_err(ToolError::from)?;
    Ok(json!({ "delivered": true }))
}
