//! A task's shared folder as operator tools: list, read and write text files (contract: "Splitting work
//! across agents"). Agents reach the same folder through their harness tools.

use crate::cx::{Cx, Membership};
use crate::domain::taskfs::{self, Folder, TaskPath, Writer};
use crate::error::{ApiError, Code};
use crate::ops::sessions;
use crate::rules::ids::{SessionId, TaskId};
use crate::rules::params::Int;
use crate::store::{self, files::FileInfo};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A task the caller may see: its id is its first session's id.
pub async fn load_task(cx: &Cx<'_>, task_id: &str) -> Result<Membership, ApiError> {
    let not_found =
        || ApiError::new(Code::NotFound, format!("task `{task_id}` not found; a task id is its first session's id"));
    let (root, m) =
        sessions::load(cx, task_id).await.map_err(|e| if e.code == Code::NotFound { not_found() } else { e })?;
    if root.task_id != task_id {
        return Err(not_found());
    }
    Ok(m)
}

/// The lane a reader names: none (the task's base), or one of its sessions' (its view of the folder, with
/// the work it has not landed yet, when the task gives lanes).
pub async fn lane_read(cx: &Cx<'_>, task_id: &str, session_id: Option<&str>) -> Result<String, ApiError> {
    let Some(sid) = session_id else { return Ok(String::new()) };
    let (s, _) = sessions::load(cx, sid).await?;
    if s.task_id != task_id {
        return Err(ApiError::invalid(format!("session `{sid}` is not a session of task `{task_id}`")));
    }
    taskfs::lane_of(cx.db(), task_id, sid).await
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTaskFiles {
    /// The task (its first session's id).
    pub task_id: TaskId,
    /// Page size (default 200).
    pub limit: Option<Int<1, 500>>,
    /// `next_cursor` from the previous page.
    pub cursor: Option<String>,
    /// A session of the task: its view, unlanded work included (default: the base).
    pub session_id: Option<SessionId>,
    /// Ignored: the workspace is the task's.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskFiles {
    pub task_id: String,
    /// The latest version of each file, by path.
    pub files: Vec<FileInfo>,
    /// Pass as `cursor` for the next page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// list_task_files
pub async fn list(cx: &Cx<'_>, p: ListTaskFiles) -> Result<TaskFiles, ApiError> {
    let limit = p.limit.map_or(200, Int::get);
    let from = match p.cursor.as_deref() {
        Some(c) => {
            Some(c.strip_prefix("p_").ok_or_else(|| ApiError::invalid("`cursor` must be a `next_cursor` unchanged"))?)
        }
        None => None,
    };
    let m = load_task(cx, &p.task_id).await?;
    let lane = lane_read(cx, &p.task_id, p.session_id.as_deref()).await?;
    let mut files = if lane.is_empty() {
        store::files::list(cx.db(), &p.task_id, "", from, limit + 1).await?
    } else {
        let folder = Folder { workspace_id: &m.workspace_id, task_id: &p.task_id, lane: &lane };
        let view = taskfs::list(cx.db(), folder).await?;
        view.into_iter().filter(|f| from.is_none_or(|from| f.path.as_str() > from)).take(limit as usize + 1).collect()
    };
    let next_cursor =
        (files.len() as i64 > limit).then(|| format!("p_{}", files.pop().map(|f| f.path).unwrap_or_default()));
    Ok(TaskFiles { task_id: p.task_id.into(), files, next_cursor })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadTaskFile {
    /// The task (its first session's id).
    pub task_id: TaskId,
    /// The file's path in the task folder, e.g. `notes/plan.md`.
    pub path: TaskPath,
    /// A past version; the latest when left out.
    pub version: Option<i64>,
    /// A session of the task: its view, unlanded work included (default: the base).
    pub session_id: Option<SessionId>,
    /// Ignored: the workspace is the task's.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskFile {
    pub task_id: String,
    #[serde(flatten)]
    pub info: FileInfo,
    /// The file's text.
    pub content: String,
}

/// read_task_file
pub async fn read(cx: &Cx<'_>, p: ReadTaskFile) -> Result<TaskFile, ApiError> {
    let m = load_task(cx, &p.task_id).await?;
    let lane = lane_read(cx, &p.task_id, p.session_id.as_deref()).await?;
    let folder = Folder { workspace_id: &m.workspace_id, task_id: &p.task_id, lane: &lane };
    let (db, blobs) = taskfs::parts(cx.env);
    match taskfs::read(db, blobs, folder, &p.path, p.version).await {
        Ok((info, content)) => Ok(TaskFile { task_id: p.task_id.into(), info, content }),
        Err(e) if e.code == Code::NotFound && lane.is_empty() => Err(not_landed(cx, &p.task_id, &p.path, e).await?),
        Err(e) => Err(e),
    }
}

/// A file missing from the base that sessions hold in their lanes: the error says which, and how to read
/// it there, instead of only that the base has no such file.
pub async fn not_landed(cx: &Cx<'_>, task_id: &str, path: &TaskPath, missing: ApiError) -> Result<ApiError, ApiError> {
    let lanes = store::files::lanes_holding(cx.db(), task_id, path.as_str()).await?;
    let Some(first) = lanes.first() else { return Ok(missing) };
    let named: Vec<String> = lanes.iter().map(|l| format!("`{l}`")).collect();
    let whose = match named.len() {
        1 => format!("the lane of session {}", named[0]),
        _ => format!("the lanes of sessions {}", named.join(", ")),
    };
    Ok(ApiError::new(
        Code::NotFound,
        format!(
            "`{}` is not in the task's base: it is in {whose}, not landed yet; pass `session_id` (`{first}`) to read it there",
            path.as_str()
        ),
    ))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteTaskFile {
    /// The task (its first session's id).
    pub task_id: TaskId,
    /// The file's path in the task folder, e.g. `notes/plan.md` (relative; no `..`).
    pub path: TaskPath,
    /// The whole new text, up to 256 KiB; the same text adds no version.
    pub content: String,
    /// Ignored: the workspace is the task's.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FileWritten {
    pub task_id: String,
    #[serde(flatten)]
    pub info: FileInfo,
}

/// write_task_file
pub async fn write(cx: &Cx<'_>, p: WriteTaskFile) -> Result<FileWritten, ApiError> {
    let m = load_task(cx, &p.task_id).await?;
    let key_id = cx.caller()?.key_id.clone();
    let folder = Folder { workspace_id: &m.workspace_id, task_id: &p.task_id, lane: "" };
    let (db, blobs) = taskfs::parts(cx.env);
    let info = taskfs::write(db, blobs, folder, &p.path, &p.content, Writer::Key(&key_id), cx.now_ms).await?;
    Ok(FileWritten { task_id: p.task_id.into(), info })
}
