//! Tasks as the unit of work (contract: "Splitting work across agents"): what each task is waiting on,
//! its sessions as threads, its cost and budget, and its settings (lanes, review, base branch).

use crate::cx::Cx;
use crate::error::ApiError;
use crate::ops::{files::load_task, sessions};
use crate::rules::cursor;
use crate::rules::ids::{SessionId, TaskId};
use crate::rules::params::{words, Int};
use crate::store::{
    self,
    sessions::{SessionRow, SessionStatus},
    tasks::TaskRow,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTasks {
    /// Page size (default 20).
    pub limit: Option<Int<1, 100>>,
    /// `next_cursor` from the previous page.
    pub cursor: Option<String>,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskSummary {
    #[serde(flatten)]
    pub task: TaskRow,
    /// What the task is waiting on: `you` (an open request, or a reply to read), `sessions` (a turn is
    /// running) or `nothing` (all sessions stopped).
    pub waiting_on: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskList {
    /// Newest first.
    pub tasks: Vec<TaskSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

fn waiting_on(t: &TaskRow, all_stopped: bool) -> String {
    if t.open_requests > 0 {
        "you"
    } else if t.running > 0 {
        "sessions"
    } else if all_stopped {
        "nothing"
    } else {
        "you"
    }
    .to_owned()
}

/// list_tasks
pub async fn list(cx: &Cx<'_>, p: ListTasks) -> Result<TaskList, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    let limit = p.limit.map_or(20, Int::get);
    let before = cursor::parse_keyset(p.cursor.as_deref())?;
    let mut tasks = store::tasks::list(cx.db(), &w.workspace_id, before, limit + 1).await?;
    let next_cursor = (tasks.len() as i64 > limit).then(|| {
        tasks.truncate(limit as usize);
        let last = tasks.last().expect("a full page has a last row");
        cursor::keyset(last.created_ms, &last.task_id)
    });
    let tasks = tasks.into_iter().map(|t| TaskSummary { waiting_on: waiting_on(&t, false), task: t }).collect();
    Ok(TaskList { tasks, next_cursor })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTask {
    /// The task (its first session's id).
    pub task_id: TaskId,
    /// Ignored: the workspace is the task's.
    pub workspace: Option<String>,
}

/// One task in full. Its own fields rather than a flattened [`TaskSummary`]: the summary's `sessions` and
/// `open_requests` are counts, and here those names are the lists themselves.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskDetail {
    pub task_id: String,
    pub title: String,
    /// Cap on the sum of its sessions' spend, in cents.
    pub budget_cents: Option<i64>,
    /// What its sessions spent, in cents.
    pub cost_cents: i64,
    /// How many of its sessions are running a turn.
    pub running: i64,
    pub created_ms: i64,
    /// What the task is waiting on: `you` (an open request, or a reply to read), `sessions` (a turn is
    /// running) or `nothing` (all sessions stopped).
    pub waiting_on: String,
    /// Its sessions, oldest first.
    pub sessions: Vec<SessionRow>,
    /// Questions, approvals and connections its agents wait on; answer them with `answer_request`.
    pub open_requests: Vec<store::requests::RequestRow>,
    /// When the task gives each session its own lane: the files each live session's lane changed against
    /// the base (empty once landed). Empty without lanes.
    pub lanes: Vec<Lane>,
    /// Lanes on or off, the review mode and the base branch name (`set_task_settings` changes them).
    pub settings: store::lanes::TaskSettings,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Lane {
    pub session_id: String,
    pub agent_name: String,
    /// Paths the lane holds differently from the base.
    pub changed: Vec<String>,
}

/// get_task
pub async fn get(cx: &Cx<'_>, p: GetTask) -> Result<TaskDetail, ApiError> {
    load_task(cx, &p.task_id).await?;
    let task = store::tasks::get(cx.db(), &p.task_id).await?.ok_or_else(|| ApiError::not_found("task"))?;
    let sessions = store::sessions::in_task(cx.db(), &p.task_id).await?;
    let all_stopped = sessions.iter().all(|s| s.status == SessionStatus::Terminated);
    let open_requests = store::requests::open_in_task(cx.db(), &p.task_id).await?;
    let settings = store::lanes::settings(cx.db(), &p.task_id).await?.ok_or_else(|| ApiError::not_found("task"))?;
    let mut lanes = Vec::new();
    for s in sessions.iter().filter(|s| settings.lanes && s.status != SessionStatus::Terminated) {
        let changes = store::lanes::changes(cx.db(), &p.task_id, &s.session_id).await?;
        lanes.push(Lane {
            session_id: s.session_id.clone(),
            agent_name: s.agent_name.clone(),
            changed: changes.into_iter().map(|c| c.path).collect(),
        });
    }
    Ok(TaskDetail {
        waiting_on: waiting_on(&task, all_stopped),
        task_id: task.task_id,
        title: task.title,
        budget_cents: task.budget_cents,
        cost_cents: task.cost_cents,
        running: task.running,
        created_ms: task.created_ms,
        sessions,
        open_requests,
        lanes,
        settings,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetTaskBudget {
    /// The task (its first session's id).
    pub task_id: TaskId,
    /// Cap on the sum of all its sessions' spend, in cents; `null` removes the cap.
    pub budget_cents: Option<Int<1, 100_000_000>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskBudget {
    pub task_id: String,
    pub budget_cents: Option<i64>,
}

/// PUT /v1/tasks/{task_id}/budget
pub async fn set_budget(cx: &Cx<'_>, p: SetTaskBudget) -> Result<TaskBudget, ApiError> {
    load_task(cx, &p.task_id).await?;
    let budget_cents = p.budget_cents.map(Int::get);
    store::tasks::set_budget(cx.db(), &p.task_id, budget_cents).await?;
    Ok(TaskBudget { task_id: p.task_id.into(), budget_cents })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadSessionThreads {
    /// Any session of the task (`ses_…`).
    pub session_id: SessionId,
    /// Ignored: the workspace is the session's.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Thread {
    pub session_id: String,
    /// `root`, `helper`, `handoff` or `child`.
    pub relation: String,
    pub parent_session_id: Option<String>,
    pub agent_id: String,
    pub agent_name: String,
    pub model: String,
    pub status: SessionStatus,
    pub spent_cents: i64,
    pub title: String,
    pub created_ms: i64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Threads {
    pub task_id: String,
    /// Root first, then helpers, handoffs and children, each oldest first.
    pub threads: Vec<Thread>,
    pub cost_cents: i64,
}

/// read_session_threads
pub async fn threads(cx: &Cx<'_>, p: ReadSessionThreads) -> Result<Threads, ApiError> {
    let (row, _) = sessions::load(cx, &p.session_id).await?;
    let mut all = store::sessions::in_task(cx.db(), &row.task_id).await?;
    let rank = |r: &str| ["root", "helper", "handoff", "child"].iter().position(|x| *x == r).unwrap_or(4);
    all.sort_by(|a, b| {
        (rank(&a.relation), a.created_ms, &a.session_id).cmp(&(rank(&b.relation), b.created_ms, &b.session_id))
    });
    let cost_cents = all.iter().map(|s| s.spent_cents).sum();
    let threads = all
        .into_iter()
        .map(|s| Thread {
            session_id: s.session_id,
            relation: s.relation,
            parent_session_id: s.parent_session_id,
            agent_id: s.agent_id,
            agent_name: s.agent_name,
            model: s.model,
            status: s.status,
            spent_cents: s.spent_cents,
            title: s.title,
            created_ms: s.created_ms,
        })
        .collect();
    Ok(Threads { task_id: row.task_id, threads, cost_cents })
}

words! {
    /// Who merges a task's landed work.
    pub enum Review { Auto = "auto", Manual = "manual" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskSettings {
    /// The task (its first session's id).
    pub task_id: TaskId,
    /// Give each session its own lane of the folder until it lands (default off: sessions share it).
    pub lanes: Option<bool>,
    /// `auto` (`land` merges) or `manual` ("I review and merge myself").
    pub review: Option<Review>,
    /// The base's branch name (default `main`): what `project_activity` calls the base, and where a task
    /// remote set without a `branch` pushes. A name git accepts.
    pub base_branch: Option<String>,
}

/// PUT /v1/tasks/{task_id}/settings
pub async fn set_settings(cx: &Cx<'_>, p: TaskSettings) -> Result<store::lanes::TaskSettings, ApiError> {
    load_task(cx, &p.task_id).await?;
    let now = store::lanes::settings(cx.db(), &p.task_id).await?.ok_or_else(|| ApiError::not_found("task"))?;
    if let Some(b) = &p.base_branch {
        crate::rules::git_remote::branch("base_branch", b).map_err(ApiError::invalid)?;
    }
    let settings = store::lanes::TaskSettings {
        lanes: p.lanes.unwrap_or(now.lanes),
        review: p.review.map_or(now.review, |r| r.as_str().to_owned()),
        base_branch: p.base_branch.unwrap_or(now.base_branch),
    };
    store::lanes::set_settings(cx.db(), &p.task_id, &settings).await?;
    Ok(settings)
}
