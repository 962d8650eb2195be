//! Routines: agents on a schedule. The cron trigger ([`tick`], every minute, UTC) records each due fire
//! once and enqueues it; the queue consumer ([`run_fire`]) starts the session or sends the message under an
//! idempotency key derived from the fire, so a redelivered message never doubles the work. A fire that
//! keeps failing ends `failed` (the dead-letter consumer, [`give_up`]), never lost.

use crate::cx::{Cx, Membership};
use crate::domain::idempotency::{self, Scope, DEFAULT_TTL_MS, START_TTL_MS};
use crate::domain::webhooks;
use crate::error::{ApiError, Code};
use crate::ops::sessions::{self, Spec, StartIds};
use crate::rules::ids::{AgentRef, RoutineId, SessionId};
use crate::rules::params::{IdempotencyKey, Int, Text};
use crate::rules::{cron, ids};
use crate::session::{calls, Author, NewMessage};
use crate::store::{
    self,
    routines::{FireRow, FireStatus, RoutineRow},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRoutine {
    /// A name for it.
    pub name: Text<1, 100>,
    /// Each fire starts a new session of this agent (an id or `@handle`)…
    pub agent_id: Option<AgentRef>,
    /// …or sends `message` into this existing session. Give exactly one of the two.
    pub session_id: Option<SessionId>,
    /// The message each fire sends.
    pub message: Text<1, 64_000>,
    /// A 5-field cron, e.g. `0 9 * * 1-5`; left out, only `run_routine` fires it.
    pub cron: Option<String>,
    /// The IANA zone of `cron`, e.g. `Europe/Berlin` (default `UTC`).
    pub timezone: Option<String>,
    /// Cap on each run's spend, in cents (new sessions only).
    pub budget_cents: Option<Int<1, 10_000_000>>,
    /// A workspace slug; the connection's workspace when left out (with `session_id`, the session's).
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Routine {
    #[serde(flatten)]
    pub routine: RoutineRow,
    /// The newest fires: scheduled time, session, status and spend.
    pub recent_fires: Vec<FireRow>,
}

/// A routine as readers see it: its next fire is never a time already past. A paused routine has none;
/// an overdue one (its time came before the trigger ran) fires on the trigger's next minute.
pub fn shown(mut r: RoutineRow, now_ms: i64) -> RoutineRow {
    r.next_fire_ms = match r.next_fire_ms {
        _ if !r.enabled => None,
        Some(at) if at < now_ms => Some((now_ms / 60_000 + 1) * 60_000),
        next => next,
    };
    r
}

/// create_routine
pub async fn create(cx: &Cx<'_>, p: CreateRoutine) -> Result<Routine, ApiError> {
    let timezone = p.timezone.unwrap_or_else(|| "UTC".into());
    let schedule = match &p.cron {
        Some(expr) => Some(cron::parse(expr, &timezone)?),
        None => {
            cron::parse("0 0 * * *", &timezone)?;
            None
        }
    };
    let (w, agent_id, session_id) = match (&p.agent_id, &p.session_id) {
        (Some(a), None) => {
            let w = cx.workspace(p.workspace.as_deref())?.clone();
            let agent = sessions::resolve_agent(cx, &w, a).await?;
            (w, Some(agent.agent_id), None)
        }
        (None, Some(s)) => {
            let (row, w) = sessions::load(cx, s).await?;
            (w, None, Some(row.session_id))
        }
        _ => {
            return Err(ApiError::invalid(
                "give exactly one of `agent_id` (start a session each fire) and `session_id` (send into it)",
            ))
        }
    };
    let row = store::routines::insert(
        cx.db(),
        &store::routines::NewRoutine {
            routine_id: &ids::new_id("rt"),
            workspace_id: &w.workspace_id,
            name: &p.name,
            agent_id: agent_id.as_deref(),
            session_id: session_id.as_deref(),
            message: &p.message,
            cron: p.cron.as_deref(),
            timezone: &timezone,
            budget_cents: p.budget_cents.map(Int::get),
            next_fire_ms: schedule.and_then(|s| s.next_after(cx.now_ms)),
            key_id: Some(&cx.caller()?.key_id),
            now_ms: cx.now_ms,
        },
    )
    .await?;
    Ok(Routine { routine: shown(row, cx.now_ms), recent_fires: vec![] })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListRoutines {
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RoutineList {
    pub routines: Vec<Routine>,
}

/// list_routines
pub async fn list(cx: &Cx<'_>, p: ListRoutines) -> Result<RoutineList, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    let rows = store::routines::list(cx.db(), &w.workspace_id).await?;
    let mut routines = Vec::with_capacity(rows.len());
    for routine in rows {
        let recent_fires = store::routines::recent_fires(cx.db(), &routine.routine_id, 5).await?;
        routines.push(Routine { routine: shown(routine, cx.now_ms), recent_fires });
    }
    Ok(RoutineList { routines })
}

/// A routine the caller may change; anything else is `not_found`.
async fn load(cx: &Cx<'_>, routine_id: &str) -> Result<store::routines::RoutineRow, ApiError> {
    if !ids::is_id(routine_id, "rt") {
        return Err(ApiError::not_found("routine"));
    }
    let r = store::routines::get(cx.db(), routine_id).await?.ok_or_else(|| ApiError::not_found("routine"))?;
    cx.member_of(&r.workspace_id, "routine")?;
    Ok(r)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateRoutine {
    /// The routine (`rt_…`).
    pub routine_id: RoutineId,
    /// A new name.
    pub name: Option<Text<1, 100>>,
    /// A new message for each fire.
    pub message: Option<Text<1, 64_000>>,
    /// A new 5-field cron; an empty string leaves only `run_routine` to fire it.
    pub cron: Option<String>,
    /// A new IANA time zone for `cron`.
    pub timezone: Option<String>,
    /// A new cap on each run's spend, in cents; 0 removes it.
    pub budget_cents: Option<Int<0, 10_000_000>>,
    /// `false` pauses it (the cron trigger skips it; `run_routine` still fires it), `true` resumes it.
    pub enabled: Option<bool>,
    /// Ignored: the workspace is the routine's.
    pub workspace: Option<String>,
}

/// update_routine: fields left out keep their value. Its next fire is computed again from now, so a
/// routine resumed after a pause never fires for the times it missed.
pub async fn update(cx: &Cx<'_>, p: UpdateRoutine) -> Result<Routine, ApiError> {
    let old = load(cx, &p.routine_id).await?;
    // A stored name and message kept the same rule when they were set.
    let name = p.name.map_or(old.name, String::from);
    let message = p.message.map_or(old.message, String::from);
    let cron = match p.cron {
        Some(c) if c.trim().is_empty() => None,
        Some(c) => Some(c),
        None => old.cron,
    };
    let timezone = p.timezone.unwrap_or(old.timezone);
    let schedule = cron::parse(cron.as_deref().unwrap_or("0 0 * * *"), &timezone)?;
    let budget_cents = match p.budget_cents.map(Int::get) {
        Some(0) => None,
        Some(b) => Some(b),
        None => old.budget_cents,
    };
    let enabled = p.enabled.unwrap_or(old.enabled);
    let next = cron.as_ref().and_then(|_| schedule.next_after(cx.now_ms));
    let change = store::routines::Change {
        name: &name,
        message: &message,
        cron: cron.as_deref(),
        timezone: &timezone,
        budget_cents,
        enabled,
        next_fire_ms: next,
    };
    let routine = store::routines::update(cx.db(), &old.routine_id, &change)
        .await?
        .ok_or_else(|| ApiError::not_found("routine"))?;
    let recent_fires = store::routines::recent_fires(cx.db(), &routine.routine_id, 5).await?;
    Ok(Routine { routine: shown(routine, cx.now_ms), recent_fires })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoutineRef {
    /// The routine (`rt_…`).
    pub routine_id: RoutineId,
    /// Ignored: the workspace is the routine's.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RoutineDeleted {
    pub routine_id: String,
    pub deleted: bool,
}

/// delete_routine: it never fires again; the sessions its fires started stay.
pub async fn delete(cx: &Cx<'_>, p: RoutineRef) -> Result<RoutineDeleted, ApiError> {
    let r = load(cx, &p.routine_id).await?;
    let deleted = store::routines::delete(cx.db(), &r.routine_id, &r.workspace_id).await?;
    Ok(RoutineDeleted { routine_id: r.routine_id, deleted })
}

/// pause_routine: the cron trigger skips it until it is resumed (`run_routine` still fires it).
pub async fn pause(cx: &Cx<'_>, p: RoutineRef) -> Result<Routine, ApiError> {
    set_enabled(cx, p, false).await
}

/// resume_routine: it fires again from its next trigger on, never for the times it missed.
pub async fn resume(cx: &Cx<'_>, p: RoutineRef) -> Result<Routine, ApiError> {
    set_enabled(cx, p, true).await
}

/// Pausing and resuming are updates of one field, so they keep one path for the next fire's rule.
async fn set_enabled(cx: &Cx<'_>, p: RoutineRef, enabled: bool) -> Result<Routine, ApiError> {
    let change = UpdateRoutine {
        routine_id: p.routine_id,
        name: None,
        message: None,
        cron: None,
        timezone: None,
        budget_cents: None,
        enabled: Some(enabled),
        workspace: None,
    };
    update(cx, change).await
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunRoutine {
    /// The routine (`rt_…`).
    pub routine_id: RoutineId,
    /// Your unique key: a retry with it returns the same fire.
    pub idempotency_key: IdempotencyKey,
    /// Ignored: the workspace is the routine's.
    pub workspace: Option<String>,
}

/// run_routine: fires it now, once per key, and answers with the fire. A fire that fails is recorded
/// `failed` and answered as an error with its reason; a retry with the same key tries again.
pub async fn run(cx: &Cx<'_>, p: RunRoutine) -> Result<FireRow, ApiError> {
    let r = load(cx, &p.routine_id).await?;
    let args = json!({ "routine_id": p.routine_id });
    let scope =
        Scope { workspace_id: &r.workspace_id, tool: "run_routine", key: &p.idempotency_key, ttl_ms: DEFAULT_TTL_MS };
    idempotency::once(
        cx,
        scope,
        &args,
        || ids::new_id("fire"),
        |fire_id: String| {
            let r = &r;
            async move {
                store::routines::record_manual_fire(cx.db(), &fire_id, r, cx.now_ms).await?;
                // A manual fire is not retried by the queue: whatever happens is its outcome.
                if let Err(e) = execute(cx, &fire_id, r).await {
                    store::routines::settle(
                        cx.db(),
                        &fire_id,
                        FireStatus::Failed,
                        None,
                        None,
                        Some(&e.message),
                        cx.now_ms,
                    )
                    .await?;
                    failed(cx, &fire_id, r, &e.message).await;
                    let why = format!("the routine's fire `{fire_id}` failed (see list_routines): {}", e.message);
                    return Err(e.with_message(why));
                }
                store::routines::fire(cx.db(), &fire_id).await?.ok_or_else(|| ApiError::cause("fire vanished"))
            }
        },
    )
    .await
}

/// A hold older than this belongs to a step that died (an object's alarm runs 15 minutes at most).
const STALE_HOLD_MS: i64 = 60 * 60_000;

/// The cron trigger: records each due routine's fire once and enqueues it, and re-enqueues fires whose
/// message was lost. Returns how many fires it recorded.
pub async fn tick(cx: &Cx<'_>) -> Result<usize, ApiError> {
    let now = cx.now_ms;
    let due = store::routines::due(cx.db(), now).await?;
    let mut recorded = 0;
    for r in due {
        let schedule = r.cron.as_deref().map(|c| cron::parse(c, &r.timezone));
        let (scheduled, next) = match schedule {
            Some(Ok(s)) => (s.latest_due(now).or(r.next_fire_ms).unwrap_or(now), s.next_after(now)),
            // A schedule that no longer parses stops (and the fire records why not).
            _ => (r.next_fire_ms.unwrap_or(now), None),
        };
        let fire_id = ids::new_id("fire");
        if store::routines::record_cron_fire(cx.db(), &fire_id, &r, scheduled, next, now).await? {
            recorded += 1;
            if let Err(e) = cx.env.queue.send(json!({ "fire_id": fire_id })).await {
                crate::error::log_line(&format!("cron: enqueue {fire_id} failed ({e}); it is re-sent on a later tick"));
            }
        }
    }
    for fire_id in store::routines::stranded(cx.db(), now - 120_000).await? {
        cx.env.queue.send(json!({ "fire_id": fire_id })).await.ok();
    }
    store::receipts::purge(cx.db(), now).await?;
    // Money held for model calls whose step died before settling goes back to its wallet.
    store::usage::release_stale(cx.db(), now - STALE_HOLD_MS).await?;
    // Housekeeping that may fail without stopping the schedule: it is tried again next tick.
    // Sandboxes unheard for minutes went to sleep (or died) with no turn to wake them: their time is charged.
    if let Err(e) = crate::domain::sandboxes::settle(cx.env, None, store::sandboxes::Ended::Asleep, now).await {
        crate::error::log_line(&format!("cron: charging sandboxes' time failed ({e}); tried again next tick"));
    }
    if let Err(e) = crate::domain::blobs::purge_deleted(cx).await {
        crate::error::log_line(&format!("cron: purging deleted workspaces' bytes failed ({e}); tried again next tick"));
    }
    Ok(recorded)
}

/// Whether a failed fire can succeed on a later delivery.
fn permanent(e: &ApiError) -> bool {
    matches!(
        e.code,
        Code::NotFound | Code::SessionTerminated | Code::InvalidParams | Code::InsufficientCredits | Code::Forbidden
    )
}

/// The queue consumer: runs one fire. `Err` asks for a redelivery; permanent failures are recorded and
/// answered `Ok`.
pub async fn run_fire(cx: &Cx<'_>, fire_id: &str) -> Result<(), ApiError> {
    let Some(fire) = store::routines::fire(cx.db(), fire_id).await? else { return Ok(()) };
    if fire.status != FireStatus::Queued {
        return Ok(()); // a redelivery of work already done
    }
    let Some(r) = store::routines::get(cx.db(), &fire.routine_id).await? else {
        return Ok(());
    };
    cx.env.meter.label(|l| l.workspace_id.clone_from(&r.workspace_id));
    match execute(cx, fire_id, &r).await {
        Ok(()) => Ok(()),
        Err(e) if permanent(&e) => {
            store::routines::settle(cx.db(), fire_id, FireStatus::Failed, None, None, Some(&e.message), cx.now_ms)
                .await?;
            failed(cx, fire_id, &r, &e.message).await;
            Ok(())
        }
        Err(e) => {
            store::routines::settle(cx.db(), fire_id, FireStatus::Queued, None, None, Some(&e.message), cx.now_ms)
                .await
                .ok();
            Err(e)
        }
    }
}

/// The dead-letter consumer: a fire whose deliveries all failed is recorded as failed.
pub async fn give_up(cx: &Cx<'_>, fire_id: &str) -> Result<(), ApiError> {
    let why = "delivery kept failing; gave up after retries";
    store::routines::settle(cx.db(), fire_id, FireStatus::Failed, None, None, Some(why), cx.now_ms).await?;
    let fire = store::routines::fire(cx.db(), fire_id).await?;
    if let Some(fire) = fire {
        if let Some(r) = store::routines::get(cx.db(), &fire.routine_id).await? {
            failed(cx, fire_id, &r, why).await;
        }
    }
    Ok(())
}

/// Does a fire's work under the key `fire:<fire_id>`, so it happens once however often it is delivered.
async fn execute(cx: &Cx<'_>, fire_id: &str, r: &RoutineRow) -> Result<(), ApiError> {
    let w: Membership =
        store::workspaces::as_owner(cx.db(), &r.workspace_id).await?.ok_or_else(|| ApiError::not_found("workspace"))?;
    let key = format!("fire:{fire_id}");
    let args = json!({ "routine_id": r.routine_id, "fire_id": fire_id });
    let (session_id, message_id) = match (&r.agent_id, &r.session_id) {
        (Some(agent_id), _) => {
            let agent = sessions::resolve_agent(cx, &w, agent_id).await?;
            let spec = Spec {
                workspace_id: &w.workspace_id,
                agent: &agent,
                task_id: None,
                relation: "root",
                parent_session_id: None,
                title: None,
                message: &r.message,
                from: Author::Routine { routine_id: r.routine_id.clone() },
                budget_cents: r.budget_cents,
                model: &agent.model,
                thinking: sessions::DEFAULT_THINKING,
                key_id: None,
            };
            let scope = Scope { workspace_id: &w.workspace_id, tool: "start_session", key: &key, ttl_ms: START_TTL_MS };
            let started =
                idempotency::once(cx, scope, &args, StartIds::fresh, |ids| sessions::create(cx, &spec, ids)).await?;
            (started.session.session_id, started.message_id)
        }
        (None, Some(session_id)) => {
            let scope =
                Scope { workspace_id: &w.workspace_id, tool: "send_message", key: &key, ttl_ms: DEFAULT_TTL_MS };
            let message_id = idempotency::once(
                cx,
                scope,
                &args,
                || ids::new_id("msg"),
                |message_id: String| {
                    let text = r.message.clone();
                    let from = Author::Routine { routine_id: r.routine_id.clone() };
                    async move {
                        let message = NewMessage { message_id: message_id.clone(), text, from };
                        sessions::call(cx, session_id, calls::Send { message }).await?;
                        Ok(message_id)
                    }
                },
            )
            .await?;
            (session_id.clone(), message_id)
        }
        (None, None) => return Err(ApiError::invalid("the routine has neither an agent nor a session")),
    };
    store::routines::settle(cx.db(), fire_id, FireStatus::Done, Some(&session_id), Some(&message_id), None, cx.now_ms)
        .await?;
    let data = json!({ "routine_id": r.routine_id, "name": r.name, "fire_id": fire_id, "session_id": session_id,
        "message_id": message_id });
    webhooks::emit(cx.env, &r.workspace_id, "routine.fired", Some(fire_id), data, cx.now_ms).await;
    Ok(())
}

/// `routine.failed`: a fire that will not be tried again.
async fn failed(cx: &Cx<'_>, fire_id: &str, r: &RoutineRow, why: &str) {
    let data = json!({ "routine_id": r.routine_id, "name": r.name, "fire_id": fire_id, "error": why });
    webhooks::emit(cx.env, &r.workspace_id, "routine.failed", Some(fire_id), data, cx.now_ms).await;
}
