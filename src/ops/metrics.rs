//! What a workspace's calls, turns and spend look like over time (`get_metrics`, drawn by the console's
//! Usage and Health pages), and where its turns' traces go (`set_trace_export`, `get_trace_export`).

use crate::cx::{Cx, Role};
use crate::error::{ApiError, Code};
use crate::rules::ids::AgentId;
use crate::rules::metrics::{quantile, step_minutes};
use crate::rules::params::{words, Text};
use crate::rules::{outbound, seal};
use crate::store::{self, metrics::Rollup};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

words! {
    /// How far back `get_metrics` looks.
    pub enum Window { Hour = "hour", Day = "day", Week = "week", Month = "month" }
}

impl Window {
    pub fn minutes(self) -> i64 {
        match self {
            Window::Hour => 60,
            Window::Day => 1_440,
            Window::Week => 10_080,
            Window::Month => 43_200,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetMetrics {
    /// `hour` (default; one point a minute), `day` (15 minutes), `week` (an hour) or `month` (4 hours).
    pub window: Option<Window>,
    /// One agent's numbers (its `ag_…` id) instead of the whole workspace's.
    pub agent_id: Option<AgentId>,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

/// Latency percentiles over the requests counted, in milliseconds (`null` without requests).
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Latency {
    pub p50_ms: Option<i64>,
    pub p95_ms: Option<i64>,
    pub p99_ms: Option<i64>,
    pub max_ms: Option<i64>,
}

/// The numbers of a window, or of one point of its series.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Numbers {
    /// API calls (REST, MCP, console, session server) counted in the workspace.
    pub calls: i64,
    /// Calls answered with an error code.
    pub errors: i64,
    pub latency: Latency,
    /// Turns that ended.
    pub turns: i64,
    pub turn_errors: i64,
    pub spend_cents: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// The most requests (approvals, questions) open at once, sampled each minute.
    pub open_requests: i64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Point {
    /// The point's first minute, ms since the epoch (UTC).
    pub t_ms: i64,
    #[serde(flatten)]
    pub numbers: Numbers,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AgentNumbers {
    /// `""` for calls no agent made (people's and keys' calls).
    pub agent_id: String,
    pub name: Option<String>,
    #[serde(flatten)]
    pub numbers: Numbers,
}

/// The workspace's hosted sandboxes that started in the window.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct SandboxNumbers {
    pub boots: i64,
    /// Boot time, from asking the container to start to its runner's first call: the median and the 95th
    /// percentile of the boots that became ready.
    pub boot_p50_ms: Option<i64>,
    pub boot_p95_ms: Option<i64>,
    /// Their running time (a running one's until its runner's last call), what the wallet is charged for.
    pub seconds: i64,
}

/// The numbers of a window's boots: `(boot time, running seconds)` each.
fn sandbox_numbers(boots: &[(Option<i64>, i64)]) -> SandboxNumbers {
    let mut ready: Vec<i64> = boots.iter().filter_map(|b| b.0).collect();
    ready.sort_unstable();
    // Nearest rank.
    let at = |q: f64| (!ready.is_empty()).then(|| ready[((q * ready.len() as f64).ceil() as usize).max(1) - 1]);
    SandboxNumbers {
        boots: boots.len() as i64,
        boot_p50_ms: at(0.5),
        boot_p95_ms: at(0.95),
        seconds: boots.iter().map(|b| b.1).sum(),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Metrics {
    pub workspace: String,
    pub window: Window,
    pub agent_id: Option<String>,
    pub from_ms: i64,
    pub to_ms: i64,
    /// Width of each point of `series`.
    pub step_minutes: i64,
    pub totals: Numbers,
    /// Oldest first, one point per step, empty steps included.
    pub series: Vec<Point>,
    /// The window's numbers per agent, busiest first (the workspace's view only).
    pub agents: Vec<AgentNumbers>,
    /// The workspace's hosted sandboxes in the window (the workspace's view only).
    pub sandboxes: SandboxNumbers,
}

fn numbers(r: &Rollup) -> Numbers {
    let h = r.histogram();
    Numbers {
        calls: r.calls,
        errors: r.errors,
        latency: Latency {
            p50_ms: quantile(&h, 0.50, r.latency_max_ms),
            p95_ms: quantile(&h, 0.95, r.latency_max_ms),
            p99_ms: quantile(&h, 0.99, r.latency_max_ms),
            max_ms: (r.calls > 0).then_some(r.latency_max_ms),
        },
        turns: r.turns,
        turn_errors: r.turn_errors,
        spend_cents: r.spend_cents,
        input_tokens: r.input_tokens,
        output_tokens: r.output_tokens,
        open_requests: r.open_requests,
    }
}

/// Sums points into one (the open-requests sample keeps its highest).
fn total(points: &[Rollup]) -> Rollup {
    let mut t = Rollup::default();
    for p in points {
        macro_rules! add { ($($f:ident),*) => { $( t.$f += p.$f; )* } }
        add!(
            calls,
            errors,
            latency_sum_ms,
            h0,
            h1,
            h2,
            h3,
            h4,
            h5,
            h6,
            h7,
            h8,
            h9,
            h10,
            h11,
            turns,
            turn_errors,
            spend_cents,
            input_tokens,
            output_tokens
        );
        t.latency_max_ms = t.latency_max_ms.max(p.latency_max_ms);
        t.open_requests = t.open_requests.max(p.open_requests);
    }
    t
}

pub async fn get(cx: &Cx<'_>, p: GetMetrics) -> Result<Metrics, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?.clone();
    let window = p.window.unwrap_or(Window::Hour);
    let step = step_minutes(window.minutes());
    let to_minute = cx.now_ms.div_euclid(60_000);
    // Whole steps, the current one last.
    let last = to_minute.div_euclid(step) * step;
    let first = last - (window.minutes() / step - 1) * step;
    let agent_id = p.agent_id.as_ref().map(|a| a.as_str().to_owned());
    let db = cx.db();
    let (points, by_agent, agents, boots) = futures::try_join!(
        store::metrics::series(db, &w.workspace_id, agent_id.as_deref().unwrap_or(""), first, to_minute, step),
        async {
            match &agent_id {
                Some(_) => Ok(vec![]),
                None => store::metrics::by_agent(db, &w.workspace_id, first, to_minute).await,
            }
        },
        store::agents::list(db, &w.workspace_id, 500, 0),
        async {
            match &agent_id {
                Some(_) => Ok(vec![]),
                None => store::sandboxes::window(db, &w.workspace_id, first * 60_000, cx.now_ms + 1).await,
            }
        },
    )?;
    let mut series = Vec::with_capacity((window.minutes() / step) as usize);
    let mut at = points.iter().peekable();
    let mut t = first;
    while t <= last {
        let numbers = at.next_if(|r| r.t == t).map(numbers).unwrap_or_default();
        series.push(Point { t_ms: t * 60_000, numbers });
        t += step;
    }
    let agents = by_agent
        .iter()
        .map(|r| AgentNumbers {
            agent_id: r.agent_id.clone(),
            name: agents.iter().find(|a| a.id == r.agent_id).map(|a| a.name.clone()),
            numbers: numbers(r),
        })
        .collect();
    Ok(Metrics {
        workspace: w.slug,
        window,
        agent_id,
        from_ms: first * 60_000,
        to_ms: cx.now_ms,
        step_minutes: step,
        totals: numbers(&total(&points)),
        series,
        agents,
        sandboxes: sandbox_numbers(&boots),
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetTraceExport {
    /// The OTLP/HTTP traces endpoint (e.g. `https://collector.example.com/v1/traces`): https to a public
    /// host, by the same rule as every URL a workspace names. `null` stops exporting.
    pub url: Option<Text<1, 2048>>,
    /// One header sent with each export, such as an ingest key's (`x-honeycomb-team`, `authorization`).
    pub header_name: Option<Text<1, 100>>,
    /// That header's value: sealed at rest, never shown again. Needs `header_name`.
    pub header_value: Option<Text<1, 4096>>,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TraceExportView {
    pub workspace: String,
    /// Where each turn's spans go; `null` when they go nowhere. Below the admin role, only its scheme
    /// and host (a path or query may carry a token).
    pub url: Option<String>,
    /// The header sent with them (its value is never shown).
    pub header_name: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTraceExport {
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

/// An HTTP header name: a token (RFC 9110 §5.1), and not one the export sets itself.
fn header_name_problem(name: &str) -> Option<String> {
    let token = name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !token {
        return Some("`header_name` must be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~)".into());
    }
    let lower = name.to_ascii_lowercase();
    if ["content-type", "content-length", "host", "traceparent"].contains(&lower.as_str()) {
        return Some(format!("`header_name` cannot be `{lower}`: the export sets it"));
    }
    None
}

pub async fn set_trace_export(cx: &Cx<'_>, p: SetTraceExport) -> Result<TraceExportView, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?.clone();
    cx.require_role(&w, Role::Admin)?;
    let account = cx.caller()?.account_id.clone();
    let Some(url) = p.url else {
        if p.header_name.is_some() || p.header_value.is_some() {
            return Err(ApiError::invalid("`header_name` and `header_value` need a `url`"));
        }
        store::metrics::clear_trace_export(cx.db(), &w.workspace_id).await?;
        let e = store::audit::Entry::change(&w.workspace_id, &account, "trace_export_cleared", None, "", cx.now_ms);
        store::audit::record(cx.db(), &e).await?;
        return Ok(TraceExportView { workspace: w.slug, url: None, header_name: None });
    };
    let checked = outbound::check("url", url.as_str(), cx.env.config.allow_loopback_http).map_err(ApiError::invalid)?;
    let header = match (&p.header_name, &p.header_value) {
        (None, None) => None,
        (Some(name), Some(value)) => {
            if let Some(problem) = header_name_problem(name.as_str()) {
                return Err(ApiError::invalid(problem));
            }
            let master = cx.env.config.secrets_key.as_deref().ok_or_else(|| {
                ApiError::new(
                    Code::NotImplemented,
                    "this deployment cannot keep the header's value: its SECRETS_KEY is not set",
                )
            })?;
            Some((name.as_str(), seal::seal(master, &seal::trace_export_aad(&w.workspace_id), value.as_str())))
        }
        _ => return Err(ApiError::invalid("`header_name` and `header_value` go together: give both or neither")),
    };
    let url = checked.to_string();
    store::metrics::set_trace_export(
        cx.db(),
        &w.workspace_id,
        &url,
        header.as_ref().map(|(n, v)| (*n, v.as_str())),
        cx.now_ms,
    )
    .await?;
    // The audit names the host only: a path or query may carry a token.
    let detail = format!("traces export to {}", checked.host_str().unwrap_or_default());
    let e = store::audit::Entry::change(&w.workspace_id, &account, "trace_export_set", None, &detail, cx.now_ms);
    store::audit::record(cx.db(), &e).await?;
    Ok(TraceExportView { workspace: w.slug, url: Some(url), header_name: header.map(|(n, _)| n.to_owned()) })
}

pub async fn get_trace_export(cx: &Cx<'_>, p: GetTraceExport) -> Result<TraceExportView, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?.clone();
    let t = store::metrics::trace_export(cx.db(), &w.workspace_id).await?;
    // A path or query may carry a token: only admins (who may set it) see the whole URL.
    let full = w.role >= Role::Admin;
    Ok(TraceExportView {
        workspace: w.slug,
        url: t.as_ref().map(|t| if full { t.url.clone() } else { origin(&t.url) }),
        header_name: t.and_then(|t| t.header_name),
    })
}

/// A URL's scheme, host and port only.
fn origin(url: &str) -> String {
    url::Url::parse(url).map(|u| u.origin().ascii_serialization()).unwrap_or_default()
}
