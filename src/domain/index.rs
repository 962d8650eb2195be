//! The search index's conversations: what the session's object and a search's catch-up copy from a
//! session's log into the full-text index (see `ops::context` for the search itself). Idempotent (one
//! row per session and event sequence number), so the two may race.

use crate::cx::Cx;
use crate::session::{calls, Core, Event, LocalSql, Page, SessionConfig, SessionStatus, Transition, MAX_PAGE};
use crate::store::{self, context::Doc, Sql};
use serde_json::Value;
use std::future::Future;

/// Sessions a search catches up before it runs, at most.
const CATCH_UP_SESSIONS: i64 = 10;
/// Pages of a session's log one indexing pass reads, at most (200 events each).
const PAGES_PER_PASS: usize = 10;

/// The role and text of a searchable event: what a person, peer, routine or goal said, or the agent.
pub fn message_of(e: &Event) -> Option<(String, String)> {
    let role = match e.kind.as_str() {
        "agent_message" => "agent".to_owned(),
        // `from` is `"user"`, `"goal"` or `{"peer": {…}}`, `{"routine": {…}}`.
        "user_message" => match &e.body["from"] {
            Value::String(s) => s.clone(),
            Value::Object(o) => o.keys().next().cloned().unwrap_or_else(|| "user".into()),
            _ => "user".into(),
        },
        _ => return None,
    };
    let text = e.body["text"].as_str()?;
    Some((role, text.to_owned()))
}

/// Indexes what pages of a session's log hold after its watermark, and moves the watermark, in one
/// batch. `read` reads one page after a sequence number (from the object, or from its own log).
async fn index_log<F, Fut>(db: &dyn Sql, lag: &store::context::Lagging, now_ms: i64, mut read: F) -> Result<(), String>
where
    F: FnMut(i64) -> Fut,
    Fut: Future<Output = Result<Page, String>>,
{
    let mut after = lag.indexed_seq;
    let mut docs = Vec::new();
    let mut caught_up = false;
    for _ in 0..PAGES_PER_PASS {
        let page = read(after).await?;
        for e in &page.events {
            if let Some((role, text)) = message_of(e).filter(|(_, t)| !t.trim().is_empty()) {
                docs.push(Doc { seq: e.seq, role, text, at_ms: e.at_ms });
            }
        }
        after = page.last_seq.max(after);
        if !page.has_more {
            caught_up = true;
            break;
        }
    }
    let source = store::context::Source {
        scope: "conversations",
        workspace_id: &lag.workspace_id,
        account_id: None,
        source_id: &lag.session_id,
        title: &lag.title,
        author: None,
        only_if_trace: None,
    };
    let mut stmts = store::context::add_docs(&source, &docs);
    // Not caught up: the watermark moves, but the session stays behind for the next pass.
    stmts.push(store::context::set_watermark(
        &lag.session_id,
        &lag.workspace_id,
        after,
        if caught_up { now_ms } else { 0 },
    ));
    db.batch(stmts).await.map(drop).map_err(|e| e.to_string())
}

/// The hook the session's step calls when a turn has ended: copies the session's new messages from its
/// own log into the index. It never fails the step; a failure is logged and the next search catches up.
pub async fn index_turn<S: LocalSql + ?Sized>(
    db: &dyn Sql,
    core: &Core<'_, S>,
    config: &SessionConfig,
    t: &Transition,
    now_ms: i64,
) {
    if !t.index_changed {
        return;
    }
    let result = async {
        let Some(lag) = store::context::index_state(db, &config.session_id).await.map_err(|e| e.to_string())? else {
            return Ok(());
        };
        index_log(db, &lag, now_ms, |after| std::future::ready(core.page(after, None, MAX_PAGE).map_err(|r| r.message)))
            .await
    }
    .await;
    if let Err(e) = result {
        crate::error::log_line(&format!("session {}: indexing for search failed: {e}", config.session_id));
    }
}

/// Brings the index up to date for the most recently active sessions it is behind on.
pub async fn catch_up(cx: &Cx<'_>, workspace_ids: &[String]) {
    let lagging = match store::context::lagging(cx.db(), workspace_ids, CATCH_UP_SESSIONS).await {
        Ok(l) => l,
        Err(e) => return crate::error::log_line(&format!("search catch-up: {e}")),
    };
    for lag in lagging {
        let session_id = lag.session_id.as_str();
        let read = |after| async move {
            let call = calls::Read { after, message_id: None, limit: MAX_PAGE, wait_ms: 0 };
            match cx.env.sessions.ask(session_id, call).await? {
                Ok(page) => Ok(page),
                // An object that never started (or was purged) has nothing to index.
                Err(_) => Ok(Page {
                    events: vec![],
                    last_seq: after,
                    has_more: false,
                    turn_finished: true,
                    // Unread here; a session without an object never got past starting.
                    status: SessionStatus::Provisioning,
                }),
            }
        };
        if let Err(e) = index_log(cx.db(), &lag, cx.now_ms, read).await {
            crate::error::log_line(&format!("search catch-up of {}: {e}", lag.session_id));
        }
    }
}
