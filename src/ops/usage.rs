//! Money: the wallet, the usage ledger and what `get_usage` reports.

use crate::cx::Cx;
use crate::error::{ApiError, Code};
use crate::ops::sessions;
use crate::rules::ids::SessionId;
use crate::rules::params::{words, Int};
use crate::rules::time;
use crate::store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

words! {
    /// What `get_usage` totals by.
    pub enum GroupBy { Day = "day", Session = "session", ApiKey = "api_key", Agent = "agent", Model = "model" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetUsage {
    /// First UTC day, `YYYY-MM-DD` (default: 29 days before `to`).
    pub from: Option<String>,
    /// Last UTC day, inclusive, `YYYY-MM-DD` (default: today).
    pub to: Option<String>,
    /// Default `day`.
    pub group_by: Option<GroupBy>,
    /// One session's totals and newest entries instead (its workspace is used).
    pub session_id: Option<SessionId>,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Usage {
    pub workspace: String,
    pub balance_cents: i64,
    pub card_saved: bool,
    pub from: String,
    pub to: String,
    pub group_by: String,
    pub total_cents: i64,
    pub groups: Vec<store::usage::Group>,
    /// With `session_id`: that session's totals and newest entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionUsage>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionUsage {
    pub session_id: String,
    pub spent_cents: i64,
    pub budget_cents: Option<i64>,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub entries: Vec<store::usage::EntryRow>,
    /// What a coding agent CLI (`claude-code`, `codex`) reported the session's turns used: recorded, not
    /// charged (the person's own CLI pays its provider); the session's budget counts it.
    pub reported: Reported,
}

/// A session's reported usage: its totals and its newest turns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Reported {
    pub input_tokens: i64,
    pub cached_input_tokens: i64,
    pub output_tokens: i64,
    /// In US dollars: each CLI's own figure, or priced by this deployment from the tokens (`estimated`).
    pub cost_usd: f64,
    pub turns: Vec<store::reported::ReportedRow>,
}

/// A `YYYY-MM-DD` parameter as midnight UTC; absent, the day of `default_ms`.
pub fn day(field: &str, value: Option<&str>, default_ms: i64) -> Result<i64, ApiError> {
    match value {
        None => Ok(default_ms.div_euclid(time::DAY_MS) * time::DAY_MS),
        Some(s) => time::parse_day(s).ok_or_else(|| {
            ApiError::invalid(format!("`{field}` must be a date, YYYY-MM-DD (got {})", crate::rules::params::quoted(s)))
        }),
    }
}

/// get_usage
pub async fn get(cx: &Cx<'_>, p: GetUsage) -> Result<Usage, ApiError> {
    let group_by = p.group_by.unwrap_or(GroupBy::Day).as_str().to_owned();
    let to = day("to", p.to.as_deref(), cx.now_ms)?;
    let from = day("from", p.from.as_deref(), to - 29 * time::DAY_MS)?;
    if from > to {
        return Err(ApiError::invalid("`from` must not be after `to`"));
    }
    if to - from > 366 * time::DAY_MS {
        return Err(ApiError::invalid("`from`–`to` may span at most 366 days"));
    }
    let (w, session) = match &p.session_id {
        Some(id) => {
            let (row, m) = sessions::load(cx, id).await?;
            (m, Some(row))
        }
        None => (cx.workspace(p.workspace.as_deref())?.clone(), None),
    };
    let db = cx.db();
    let overview = store::workspaces::overview(db, &w.workspace_id, 0).await?;
    let (wallet, _) = overview.ok_or_else(|| ApiError::not_found("workspace"))?;
    let groups = store::usage::grouped(db, &w.workspace_id, &group_by, from, to + time::DAY_MS).await?;
    let session = match session {
        Some(row) => {
            let entries = store::usage::newest_for_session(db, &row.session_id, 50).await?;
            let turns = store::reported::newest_for_session(db, &row.session_id, 50).await?;
            let reported = Reported {
                input_tokens: turns.iter().map(|t| t.input_tokens).sum(),
                cached_input_tokens: turns.iter().map(|t| t.cached_input_tokens).sum(),
                output_tokens: turns.iter().map(|t| t.output_tokens).sum(),
                cost_usd: store::reported::usd(store::reported::session_total(db, &row.session_id).await?),
                turns,
            };
            Some(SessionUsage {
                reported,
                input_tokens: entries.iter().map(|e| e.input_tokens).sum(),
                output_tokens: entries.iter().map(|e| e.output_tokens).sum(),
                session_id: row.session_id,
                spent_cents: row.spent_cents,
                budget_cents: row.budget_cents,
                entries,
            })
        }
        None => None,
    };
    Ok(Usage {
        workspace: w.slug,
        balance_cents: wallet.balance_cents,
        card_saved: wallet.card_saved,
        from: time::format_day(from),
        to: time::format_day(to),
        group_by,
        total_cents: groups.iter().map(|g| g.cents).sum(),
        groups,
        session,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AddCredit {
    /// The workspace's slug.
    pub workspace: String,
    /// Cents to add, 1–100,000,000.
    pub amount_cents: Int<1, 100_000_000>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Credited {
    pub workspace: String,
    pub balance_cents: i64,
}

/// POST /v1/workspaces/{workspace}/credit — the deployment's administrators only (admin token).
pub async fn add_credit(cx: &Cx<'_>, p: AddCredit) -> Result<Credited, ApiError> {
    let id = store::workspaces::id_by_slug(cx.db(), &p.workspace)
        .await?
        .ok_or_else(|| ApiError::new(Code::NotFound, format!("workspace `{}` not found", p.workspace)))?;
    let credit = store::usage::Credit {
        receipt_id: &crate::rules::ids::new_id("rcp"),
        workspace_id: &id,
        source: "admin",
        cents: p.amount_cents.get(),
        stripe_object_id: None,
        event: None,
        now_ms: cx.now_ms,
    };
    let balance = store::usage::credit(cx.db(), &credit).await?.unwrap_or(0);
    Ok(Credited { workspace: p.workspace, balance_cents: balance })
}
