//! Resource subscriptions for `subscriptions/listen` (2026-07-28): which resources can change, and the
//! watch that tells a listen when one did. A session's transcript and result change when an event lands
//! in its log: the watch waits in the session's object, woken by the event. A task file changes when a
//! new version is written: written in D1, which wakes no one, so the watch looks at its newest version
//! every [`FILE_CHECK_MS`]. Help articles and artifacts never change (a deploy, a new artifact), so they are
//! readable but not honored. A listen lasts at most [`LISTEN_MS`], then closes gracefully.

use crate::cx::Cx;
use crate::error::ApiError;
use crate::mcp::features::{match_template, ReadFailure};
use crate::ops::files::load_task;
use crate::ops::resources::{hides, Kind, TEMPLATES};
use crate::ops::sessions::{call, load};
use crate::session::{calls, SessionStatus, FROM_END, MAX_PAGE};
use futures::future::join_all;
use serde_json::Value;

/// The longest one listen is held before its graceful close (the client listens again).
pub const LISTEN_MS: i64 = 50_000;
/// How often a watched task file's newest version is looked at.
pub const FILE_CHECK_MS: i64 = 2_000;

/// What a subscribed URI watches.
enum Target {
    Session(String),
    TaskFile { task_id: String, path: String },
    Fixed,
}

fn target(uri: &str) -> Option<Target> {
    if crate::ops::apps::find(uri).is_some() {
        return Some(Target::Fixed);
    }
    let (t, vars) = TEMPLATES.iter().find_map(|t| match_template(t.uri, uri).map(|v| (t, v)))?;
    let var = |name: &str| vars.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
    Some(match t.kind {
        // A session's files change with its turns' events.
        Kind::Transcript | Kind::Result | Kind::SessionFile => Target::Session(var("session_id")),
        Kind::TaskFile => Target::TaskFile { task_id: var("task_id"), path: var("path") },
        Kind::Help | Kind::Artifact => Target::Fixed,
    })
}

/// Whether the caller may read `uri` (the same lookups `resources/read` makes), and whether it can change.
/// Counts one request against the key, as the read would.
pub async fn watchable(cx: &Cx<'_>, uri: &str) -> Result<bool, ReadFailure> {
    let refused = |e: ApiError| {
        let e = e.finish(&cx.request_id);
        if hides(&e) {
            ReadFailure::NotFound
        } else {
            ReadFailure::Refused(crate::ops::resources::api_error(&e))
        }
    };
    let target = target(uri).ok_or(ReadFailure::NotFound)?;
    // Each URI counts one request against the key, as reading it would.
    crate::ops::rate_limit_key(cx).await.map_err(refused)?;
    match target {
        Target::Session(session_id) => load(cx, &session_id).await.map(|_| true).map_err(refused),
        Target::TaskFile { task_id, .. } => load_task(cx, &task_id).await.map(|_| true).map_err(refused),
        // Readable through resources/read (which checks it); nothing to tell a listener about.
        Target::Fixed => Ok(false),
    }
}

/// Calls `updated(uri)` for each change of a watched resource until [`LISTEN_MS`] have passed or `updated`
/// answers `false`. URIs of one session share one wait.
pub async fn watch(cx: &Cx<'_>, uris: &[String], updated: &dyn Fn(&str) -> bool) {
    let deadline = cx.now_ms + LISTEN_MS;
    let mut sessions: Vec<(String, Vec<&str>)> = Vec::new();
    let mut files = Vec::new();
    for uri in uris {
        match target(uri) {
            Some(Target::Session(id)) => match sessions.iter_mut().find(|(s, _)| *s == id) {
                Some((_, watched)) => watched.push(uri),
                None => sessions.push((id, vec![uri])),
            },
            Some(Target::TaskFile { task_id, path }) => files.push((task_id, path, uri.as_str())),
            _ => {}
        }
    }
    let session_watches = sessions.iter().map(|(id, watched)| watch_session(cx, id, watched, deadline, updated));
    let file_watch = watch_files(cx, &files, deadline, updated);
    futures::future::join(join_all(session_watches), file_watch).await;
}

/// Waits in the session's object for each event after the listen began; every event tells each URI.
async fn watch_session(cx: &Cx<'_>, session_id: &str, uris: &[&str], deadline: i64, updated: &dyn Fn(&str) -> bool) {
    let mut after = FROM_END;
    loop {
        let wait_ms = deadline - cx.env.clock.now_ms();
        if wait_ms <= 0 {
            return;
        }
        let read = calls::Read { after, message_id: None, limit: MAX_PAGE, wait_ms };
        let page = match call(cx, session_id, read).await {
            Ok(page) => page,
            // Gone (deleted) or failing: nothing more to tell about it.
            _ => return,
        };
        // The object answers nothing new only when the wait ran out (or the session ended).
        if page.events.is_empty() || !uris.iter().all(|uri| updated(uri)) || page.status == SessionStatus::Terminated {
            return;
        }
        after = page.last_seq;
    }
}

/// Looks at each watched file's newest version every [`FILE_CHECK_MS`]; a new one tells its URI.
async fn watch_files(cx: &Cx<'_>, files: &[(String, String, &str)], deadline: i64, updated: &dyn Fn(&str) -> bool) {
    if files.is_empty() {
        return;
    }
    let newest = |task_id: &str, path: &str| {
        let (task_id, path) = (task_id.to_owned(), path.to_owned());
        async move { crate::store::files::get(cx.db(), &task_id, "", &path, None).await.ok().flatten().map(|f| f.version) }
    };
    let mut seen: Vec<Option<i64>> = join_all(files.iter().map(|(t, p, _)| newest(t, p))).await;
    while deadline - cx.env.clock.now_ms() > 0 {
        cx.env.clock.sleep(FILE_CHECK_MS.min(deadline - cx.env.clock.now_ms())).await;
        let now: Vec<Option<i64>> = join_all(files.iter().map(|(t, p, _)| newest(t, p))).await;
        for ((_, _, uri), (before, after)) in files.iter().zip(seen.iter().zip(&now)) {
            if before != after && !updated(uri) {
                return;
            }
        }
        seen = now;
    }
}
