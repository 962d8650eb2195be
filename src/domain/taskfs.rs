//! A task's shared folder: the one place that writes and reads its files, for operators' tools and for
//! agents' harness tools alike. Bytes go to R2 under their SHA-256 ([`crate::domain::blobs`]), then a new version is indexed in D1;
//! a file is text of at most 256 KiB.

use crate::cx::{Blobs, Env};
use crate::error::{ApiError, Code};
use crate::rules::{params, paths};
use crate::store::{self, files::FileInfo, Sql};
use agentsky_wire::paths::MAX_PATH_CHARS;
use sha2::{Digest, Sha256};

/// Where a task keeps the commands it was taught.
pub const PROJECT_FILE: &str = ".agentsky/project.json";

pub const MAX_FILE_BYTES: usize = 256 * 1024;

/// Who writes: an agent's session or an operator's key.
#[derive(Debug, Clone, Copy)]
pub enum Writer<'a> {
    Session(&'a str),
    Key(&'a str),
}

/// Where: a task of a workspace, and the lane within it ('' = the task's base folder).
#[derive(Debug, Clone, Copy)]
pub struct Folder<'a> {
    pub workspace_id: &'a str,
    pub task_id: &'a str,
    pub lane: &'a str,
}

/// Writes a new version of a file. `path` is normalised here.
pub async fn write(
    db: &dyn Sql,
    blobs: &dyn Blobs,
    folder: Folder<'_>,
    path: &str,
    content: &str,
    writer: Writer<'_>,
    now_ms: i64,
) -> Result<FileInfo, ApiError> {
    let path = paths::normalize(path)?;
    if content.len() > MAX_FILE_BYTES {
        return Err(ApiError::new(
            Code::PayloadTooLarge,
            format!(
                "`content` is {} bytes; task files hold text up to {MAX_FILE_BYTES} bytes (256 KiB)",
                content.len()
            ),
        ));
    }
    let sha = hex::encode(Sha256::digest(content.as_bytes()));
    // A retried write of the same text adds no version, except in a lane reconciling a conflict on this
    // file: writing its own text again is how it keeps its side.
    let latest = store::files::get(db, folder.task_id, folder.lane, &path, None).await?;
    if let Some(same) = latest.filter(|l| l.sha256 == sha && !l.deleted) {
        if !reconciling(db, folder.lane, &path, same.version).await? {
            return Ok(same);
        }
    }
    crate::domain::blobs::put(blobs, folder.workspace_id, &sha, content.as_bytes().to_vec())
        .await
        .map_err(ApiError::cause)?;
    record(db, folder, &path, Some((content.len() as i64, &sha)), writer, now_ms).await
}

/// Indexes a new version of `path` (`content`: its size and sha256; `None`: a tombstone). In the base
/// folder it is a commit of its history; a lane's versions wait for `land`.
async fn record(
    db: &dyn Sql,
    folder: Folder<'_>,
    path: &str,
    content: Option<(i64, &str)>,
    writer: Writer<'_>,
    now_ms: i64,
) -> Result<FileInfo, ApiError> {
    let (session, key) = match writer {
        Writer::Session(s) => (Some(s), None),
        Writer::Key(k) => (None, Some(k)),
    };
    let commit = folder.lane.is_empty().then(|| {
        let subject = match (writer, content.is_some()) {
            (Writer::Session(s), true) => format!("{s} wrote {path}"),
            (Writer::Session(s), false) => format!("{s} deleted {path}"),
            (Writer::Key(_), true) => format!("write {path}"),
            (Writer::Key(_), false) => format!("delete {path}"),
        };
        store::lanes::insert_commit(
            folder.task_id,
            &commit_id(),
            folder.workspace_id,
            &subject,
            "",
            &[path.to_owned()],
            session,
            now_ms,
            None,
        )
    });
    let (size_bytes, sha256) = content.unwrap_or((0, store::files::TOMBSTONE_SHA));
    store::files::write(
        db,
        &store::files::NewVersion {
            task_id: folder.task_id,
            workspace_id: folder.workspace_id,
            lane: folder.lane,
            path,
            size_bytes,
            sha256,
            writer_session_id: session,
            writer_key_id: key,
            now_ms,
            deleted: content.is_none(),
        },
        commit,
    )
    .await
    .map_err(ApiError::from)
}

/// Whether the lane is reconciling a conflict on `path` and its latest version is still the one the
/// stopped merge saw: writing (or deleting) the same again is then how it keeps its side.
async fn reconciling(db: &dyn Sql, lane: &str, path: &str, version: i64) -> Result<bool, ApiError> {
    Ok(match lane {
        "" => false,
        lane => store::lanes::lane_state(db, lane)
            .await?
            .and_then(|s| s.lane_merging)
            .is_some_and(|m| m.files.get(path).is_some_and(|p| p.version == version)),
    })
}

/// Deletes a file: in a lane, a tombstone that hides the base's file from the lane until `land` carries
/// the delete into the base; in the base folder, a tombstone and a commit. The file must be there as the
/// folder sees it (a lane deleting its own new file leaves no trace the base would see). Answers the
/// tombstone's version.
pub async fn delete(
    db: &dyn Sql,
    folder: Folder<'_>,
    path: &str,
    writer: Writer<'_>,
    now_ms: i64,
) -> Result<FileInfo, ApiError> {
    let path = paths::normalize(path)?;
    let own = store::files::get(db, folder.task_id, folder.lane, &path, None).await?;
    let seen = match &own {
        Some(f) => !f.deleted,
        None if folder.lane.is_empty() => false,
        None => store::files::get(db, folder.task_id, "", &path, None).await?.is_some_and(|f| !f.deleted),
    };
    if !seen {
        // Deleting again while reconciling a conflict keeps the lane's side: its delete.
        let again = match &own {
            Some(f) if f.deleted => reconciling(db, folder.lane, &path, f.version).await?,
            _ => false,
        };
        if !again {
            return Err(ApiError::new(
                Code::NotFound,
                format!("no file `{path}` in this task to delete; call list_task_files"),
            ));
        }
    }
    record(db, folder, &path, None, writer, now_ms).await
}

/// The version of `path` (latest, or `version`) a folder shows: the lane's where it wrote the file, else
/// the base's (a lane sees the base wherever it has not written). A deletion is a version too.
pub async fn shown(
    db: &dyn Sql,
    folder: Folder<'_>,
    path: &str,
    version: Option<i64>,
) -> Result<Option<FileInfo>, ApiError> {
    let in_lane = match folder.lane {
        "" => None,
        lane => store::files::get(db, folder.task_id, lane, path, version).await?,
    };
    Ok(match in_lane {
        Some(found) => Some(found),
        None => store::files::get(db, folder.task_id, "", path, version).await?,
    })
}

/// Reads a file's latest version (or a given one) with its text.
pub async fn read(
    db: &dyn Sql,
    blobs: &dyn Blobs,
    folder: Folder<'_>,
    path: &str,
    version: Option<i64>,
) -> Result<(FileInfo, String), ApiError> {
    let path = paths::normalize(path)?;
    let info = shown(db, folder, &path, version)
        .await?
        .ok_or_else(|| ApiError::new(Code::NotFound, format!("no file `{path}` in this task; call list_task_files")))?;
    if info.deleted {
        let why = match version {
            Some(v) => format!("version {v} of `{path}` is its deletion; read an earlier version"),
            None => format!("`{path}` was deleted; call list_task_files"),
        };
        return Err(ApiError::new(Code::NotFound, why));
    }
    let bytes = crate::domain::blobs::get(blobs, folder.workspace_id, &info.sha256)
        .await
        .map_err(ApiError::cause)?
        .ok_or_else(|| ApiError::cause(format!("blob {} missing", info.sha256)))?;
    let text = String::from_utf8(bytes).map_err(ApiError::cause)?;
    Ok((info, text))
}

/// The env's database and blobs, for callers holding an [`Env`].
pub fn parts(env: &Env) -> (&dyn Sql, &dyn Blobs) {
    (&env.db, env.blobs.as_ref())
}

/// A short id for a commit, like a git abbreviation.
pub fn commit_id() -> String {
    hex::encode(crate::rules::ids::random_bytes::<6>())
}

/// The latest version of each file as a folder sees it: the base, with a lane's own files over it.
pub async fn list(db: &dyn Sql, folder: Folder<'_>) -> Result<Vec<FileInfo>, ApiError> {
    let internal = |e| ApiError::cause(e);
    let mut files = store::files::list(db, folder.task_id, "", None, 1000).await.map_err(internal)?;
    if !folder.lane.is_empty() {
        for own in
            store::files::list_with_deletes(db, folder.task_id, folder.lane, None, 1000).await.map_err(internal)?
        {
            match files.iter_mut().find(|f| f.path == own.path) {
                Some(f) => *f = own,
                None => files.push(own),
            }
        }
        // The lane's deletes hide the base's files.
        files.retain(|f| !f.deleted);
        files.sort_by(|a, b| a.path.cmp(&b.path));
    }
    Ok(files)
}

/// The lane an agent's session writes in: its own when the task gives lanes, else the base.
pub async fn lane_of(db: &dyn Sql, task_id: &str, session_id: &str) -> Result<String, ApiError> {
    let settings = store::lanes::settings(db, task_id).await?;
    Ok(if settings.is_some_and(|s| s.lanes) { session_id.to_owned() } else { String::new() })
}

/// A path in the task folder as a parameter, on every face that names a file (the operator's file
/// operations, `publish_artifact`, the harness's file tools): decoded by the wire crate's rule, so it
/// arrives normalised, and published with its length.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct TaskPath(String);

impl TaskPath {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> serde::Deserialize<'de> for TaskPath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let raw = String::deserialize(d)?;
        if let Some(problem) = params::text_problem(&raw, 1, MAX_PATH_CHARS) {
            return Err(D::Error::custom(problem));
        }
        agentsky_wire::paths::normalize(&raw).map(TaskPath).map_err(|why| {
            D::Error::custom(format!(
                "{} (got {}); use a relative path like `notes/plan.md`",
                why.0,
                crate::rules::params::quoted(&raw)
            ))
        })
    }
}

impl schemars::JsonSchema for TaskPath {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TaskPath".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "minLength": 1, "maxLength": MAX_PATH_CHARS })
    }
}

impl std::ops::Deref for TaskPath {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for TaskPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

// The harness's file tools take the fields of the operator's `read_task_file`/`write_task_file` less
// `task_id` and `workspace` (a session knows its task). They share the field types (`TaskPath`), not
// the structs: serde cannot `flatten` one struct into another that refuses unknown fields
// (`deny_unknown_fields` is unsupported with `flatten`; unknown fields would pass silently, numbers
// lose their type in the buffered map, and a refusal loses its field's path).

/// The arguments writing one whole file of the folder (the harness's `write_task_file`).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileText {
    /// Relative path, e.g. notes/plan.md (no `..`).
    pub path: TaskPath,
    /// The whole new text of the file, up to 256 KiB.
    pub content: String,
}

/// The arguments deleting one file of the folder (the harness's `delete_task_file`).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeletePath {
    /// Relative path, e.g. notes/old.md. To rename a file, write it under the new path and delete the old.
    pub path: TaskPath,
}

crate::rules::params::words! {
    /// Which version of a file a lane reads: its own view (the lane over the base), the base's newest,
    /// or the merge base (the base as the lane last merged it).
    pub enum At { Lane = "lane", Base = "base", MergeBase = "merge_base" }
}

/// The arguments reading one file of the folder, optionally at the base or at the lane's merge base
/// (for reconciling a conflict `land` reported).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadPath {
    /// Relative path, e.g. notes/plan.md.
    pub path: TaskPath,
    /// `lane` (default: what this session sees), `base` (the task's base now) or `merge_base` (the base
    /// as this lane last merged it, the common ancestor of a conflict).
    pub at: Option<At>,
}

/// Reads a file as a session's lane sees it, or at the base or the lane's merge base.
pub async fn read_at(
    db: &dyn Sql,
    blobs: &dyn Blobs,
    folder: Folder<'_>,
    path: &str,
    at: At,
) -> Result<(FileInfo, String), ApiError> {
    let base = Folder { lane: "", ..folder };
    match at {
        At::Lane => read(db, blobs, folder, path, None).await,
        At::Base => read(db, blobs, base, path, None).await,
        At::MergeBase => {
            let path = paths::normalize(path)?;
            let state = match folder.lane {
                "" => None,
                lane => store::lanes::lane_state(db, lane).await?,
            };
            let Some(state) = state else {
                return Err(ApiError::invalid("`at: \"merge_base\"` is for a session working in its own lane"));
            };
            let lane = crate::domain::lanemerge::Lane {
                workspace_id: folder.workspace_id,
                task_id: folder.task_id,
                session_id: folder.lane,
            };
            let seq = crate::domain::lanemerge::merge_base_of(db, lane, &path, &state).await?;
            let info = store::files::base_at(db, folder.task_id, &path, seq).await?.ok_or_else(|| {
                ApiError::new(Code::NotFound, format!("`{path}` did not exist in the base at this lane's merge base"))
            })?;
            read(db, blobs, base, &path, Some(info.version)).await
        }
    }
}
