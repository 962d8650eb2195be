//! Standing goals: a session keeps working toward an objective on its own, checked after every turn,
//! within its limits. The goal lives in the session's object; these tools set, read and clear it.

use crate::cx::Cx;
use crate::domain::idempotency::{self, Scope, DEFAULT_TTL_MS};
use crate::error::ApiError;
use crate::ops::sessions;
use crate::rules::ids::SessionId;
use crate::rules::params::{Capped, IdempotencyKey, Int, Text};
use crate::session::goal::{Criterion, CriterionInput, Goal, GoalStatus};
use crate::session::{calls, SessionRequest};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetGoal {
    /// The session.
    pub session_id: SessionId,
    /// Ignored: the workspace is the session's.
    pub workspace: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct GoalView {
    pub session_id: String,
    /// The goal with its progress: iterations used, spend, minutes, the last verdict per criterion and,
    /// once it stopped, why (`met`, `limit_reached`, `not_checkable`, `cleared`). `null` when none was set.
    pub goal: Option<Goal>,
}

async fn goal_call<C>(cx: &Cx<'_>, session_id: &str, call: C) -> Result<GoalView, ApiError>
where
    C: SessionRequest<Reply = Option<Goal>>,
{
    let goal = sessions::call(cx, session_id, call).await?;
    Ok(GoalView { session_id: session_id.to_owned(), goal })
}

/// get_goal
pub async fn get(cx: &Cx<'_>, p: GetGoal) -> Result<GoalView, ApiError> {
    sessions::load(cx, &p.session_id).await?;
    goal_call(cx, &p.session_id, calls::GetGoal {}).await
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetGoal {
    /// The session.
    pub session_id: SessionId,
    /// What the session should achieve.
    pub objective: Text<1, 4_000>,
    /// How to tell it is met; without any, the objective itself is graded.
    pub criteria: Option<Capped<CriterionInput, 20>>,
    /// Most turns the goal may start (default 10).
    pub max_iterations: Option<Int<1, 50>>,
    /// Most the goal may spend, in cents.
    pub max_spend_cents: Option<Int<1, 10_000_000>>,
    /// Most minutes the goal may run.
    pub max_minutes: Option<Int<1, 1_440>>,
    /// Your unique key: a retry with it returns the same goal.
    pub idempotency_key: IdempotencyKey,
    /// Ignored: the workspace is the session's.
    pub workspace: Option<String>,
}

/// set_goal
pub async fn set(cx: &Cx<'_>, p: SetGoal) -> Result<GoalView, ApiError> {
    let criteria: Vec<Criterion> =
        p.criteria.clone().map(Capped::into_vec).unwrap_or_default().into_iter().map(Criterion::from).collect();
    // Whole numbers the range types hold; 50 fits a u32.
    let max_iterations = p.max_iterations.map_or(10, |n| n.get() as u32);
    let (max_spend_cents, max_minutes) = (p.max_spend_cents.map(Int::get), p.max_minutes.map(Int::get));
    let (row, w) = sessions::load(cx, &p.session_id).await?;
    let goal = Goal {
        objective: p.objective.to_string(),
        criteria,
        max_iterations,
        max_spend_cents,
        max_minutes,
        status: GoalStatus::Active,
        stopped_reason: None,
        iterations: 0,
        spent_cents: 0,
        minutes: 0,
        last_verdicts: vec![],
        set_ms: cx.now_ms,
        spent_at_set: 0,
    };
    let args = json!({"session_id": p.session_id, "objective": p.objective, "criteria": p.criteria,
        "max_iterations": p.max_iterations, "max_spend_cents": p.max_spend_cents, "max_minutes": p.max_minutes});
    let scope =
        Scope { workspace_id: &w.workspace_id, tool: "set_goal", key: &p.idempotency_key, ttl_ms: DEFAULT_TTL_MS };
    idempotency::once(
        cx,
        scope,
        &args,
        || (),
        |()| {
            let goal = goal.clone();
            let session_id = row.session_id.clone();
            async move { goal_call(cx, &session_id, calls::SetGoal { goal: Box::new(goal) }).await }
        },
    )
    .await
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClearGoal {
    /// The session.
    pub session_id: SessionId,
    /// Your unique key: a retry with it returns the same answer.
    pub idempotency_key: IdempotencyKey,
    /// Ignored: the workspace is the session's.
    pub workspace: Option<String>,
}

/// clear_goal
pub async fn clear(cx: &Cx<'_>, p: ClearGoal) -> Result<GoalView, ApiError> {
    let (row, w) = sessions::load(cx, &p.session_id).await?;
    let scope =
        Scope { workspace_id: &w.workspace_id, tool: "clear_goal", key: &p.idempotency_key, ttl_ms: DEFAULT_TTL_MS };
    let args = json!({ "session_id": p.session_id });
    idempotency::once(cx, scope, &args, || (), |()| goal_call(cx, &row.session_id, calls::ClearGoal {})).await
}
