//! Hand-offs: a session continued by another agent (optionally on another model and thinking level). A
//! new session starts in the same task, so it has the task's files, and its first message carries the
//! conversation so far; the original stays as it is.

use crate::cx::Cx;
use crate::domain::idempotency::{self, Scope, DEFAULT_TTL_MS};
use crate::error::ApiError;
use crate::ops::sessions::{self, Model, Spec, StartIds, Thinking};
use crate::ops::transcript::{entry, Entry};
use crate::rules::ids::{AgentRef, HandoffId, SessionId};
use crate::rules::params::{IdempotencyKey, Text};
use crate::rules::{ids, title};
use crate::session::{calls, Author};
use crate::store;
use crate::store::handoffs::{HandoffRow, HandoffState};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The most of the conversation a brief carries, in characters.
const BRIEF_CHARS: usize = 48_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandOffSession {
    /// The session to continue (`ses_…`).
    pub session_id: SessionId,
    /// The agent that continues: an id or `@handle`.
    pub agent_id: AgentRef,
    /// The model the new session runs (default: the agent's own).
    pub model: Option<Model>,
    /// Default `medium`.
    pub thinking: Option<Thinking>,
    /// A note for the new agent, added after the conversation.
    pub message: Option<Text<1, 4_000>>,
    /// Your unique key: a retry with it returns the same hand-off.
    pub idempotency_key: IdempotencyKey,
    /// Ignored: the workspace is the session's.
    pub workspace: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Handoff {
    #[serde(flatten)]
    pub handoff: HandoffRow,
    /// Once `completed`: the session to continue with, its first message and the cursor after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_session: Option<sessions::Started>,
}

#[derive(Serialize, Deserialize)]
struct Reserved {
    handoff_id: String,
    start: StartIds,
}

/// The new agent's first message: the conversation so far, from the source session's log.
async fn brief(cx: &Cx<'_>, source: &str, note: Option<&str>) -> Result<String, ApiError> {
    let mut lines = Vec::new();
    let mut after = 0;
    for _ in 0..10 {
        let call = calls::Read { after, message_id: None, limit: 200, wait_ms: 0 };
        let page = sessions::call(cx, source, call).await?;
        for e in &page.events {
            // The brief carries the conversation only: tool calls and their output stay in the source.
            if let Some(Entry::Said { who, text }) = entry(e) {
                lines.push(format!("[{who}] {text}"));
            }
        }
        after = page.last_seq;
        if !page.has_more {
            break;
        }
    }
    let mut convo = lines.join("\n\n");
    if convo.chars().count() > BRIEF_CHARS {
        // Keep the newest part: the end of a conversation says where it stands.
        let skip = convo.chars().count() - BRIEF_CHARS;
        convo = format!("[… earlier conversation cut …]\n{}", convo.chars().skip(skip).collect::<String>());
    }
    let mut text = format!(
        "You are taking over session {source} from another agent. Your folder holds the files so far, landed or not. \
The conversation until now:\n\n{convo}\n\nContinue the work from here."
    );
    if let Some(n) = note {
        text.push_str(&format!("\n\nA note from the person handing it over: {n}"));
    }
    Ok(text)
}

/// hand_off_session
pub async fn hand_off(cx: &Cx<'_>, p: HandOffSession) -> Result<Handoff, ApiError> {
    let (source, w) = sessions::load(cx, &p.session_id).await?;
    let agent = sessions::resolve_agent(cx, &w, &p.agent_id).await?;
    let key_id = cx.caller()?.key_id.clone();
    let args = json!({"session_id": p.session_id, "agent_id": p.agent_id, "model": p.model, "thinking": p.thinking, "message": p.message});
    let scope = Scope {
        workspace_id: &w.workspace_id,
        tool: "hand_off_session",
        key: &p.idempotency_key,
        ttl_ms: DEFAULT_TTL_MS,
    };
    let reserve = || Reserved { handoff_id: ids::new_id("ho"), start: StartIds::fresh() };
    idempotency::once(cx, scope, &args, reserve, |r: Reserved| {
        let (source, agent, p, key_id, w) = (&source, &agent, &p, &key_id, &w);
        async move {
            let db = cx.db();
            store::handoffs::open(db, &r.handoff_id, &w.workspace_id, &source.session_id, &agent.agent_id, cx.now_ms)
                .await?;
            let message = brief(cx, &source.session_id, p.message.as_deref()).await?;
            let model = p.model.clone().map_or_else(|| agent.model.clone(), String::from);
            let spec = Spec {
                workspace_id: &w.workspace_id,
                agent,
                task_id: Some(&source.task_id),
                relation: "handoff",
                parent_session_id: Some(&source.session_id),
                // Lists show the note, or the session it continues, not the whole brief.
                title: Some(title::short(p.message.as_deref().unwrap_or(&source.title))),
                message: &message,
                from: Author::User,
                budget_cents: None,
                model: &model,
                thinking: p.thinking.map_or(sessions::DEFAULT_THINKING, Thinking::as_str),
                key_id: Some(key_id),
            };
            let started = match sessions::create(cx, &spec, r.start).await {
                Ok(s) => s,
                Err(e) => {
                    let _ = store::handoffs::finish(
                        db,
                        &r.handoff_id,
                        HandoffState::Failed,
                        None,
                        Some(&e.message),
                        cx.now_ms,
                    )
                    .await;
                    return Err(e);
                }
            };
            store::handoffs::finish(
                db,
                &r.handoff_id,
                HandoffState::Completed,
                Some(&started.session.session_id),
                None,
                cx.now_ms,
            )
            .await?;
            let handoff =
                store::handoffs::get(db, &r.handoff_id).await?.ok_or_else(|| ApiError::cause("handoff vanished"))?;
            Ok(Handoff { handoff, target_session: Some(started) })
        }
    })
    .await
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetHandoff {
    /// The hand-off (`ho_…`).
    pub handoff_id: HandoffId,
    /// Ignored: the workspace is the hand-off's.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct HandoffStatus {
    #[serde(flatten)]
    pub handoff: HandoffRow,
    /// Once `completed`: the session to continue with.
    pub target_session: Option<store::sessions::SessionRow>,
}

/// get_handoff
pub async fn get(cx: &Cx<'_>, p: GetHandoff) -> Result<HandoffStatus, ApiError> {
    let h = store::handoffs::get(cx.db(), &p.handoff_id).await?.ok_or_else(|| ApiError::not_found("handoff"))?;
    cx.member_of(&h.workspace_id, "handoff")?;
    let target_session = match &h.target_session_id {
        Some(id) => store::sessions::get(cx.db(), id).await?,
        None => None,
    };
    Ok(HandoffStatus { handoff: h, target_session })
}
