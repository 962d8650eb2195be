//! The catalog: every agent the caller can start, by `@handle`, ranked by how well it matches the words
//! given.

use crate::cx::Cx;
use crate::error::ApiError;
use crate::rules::params::{Int, Text};
use crate::store::{self, agents::Agent};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchCatalog {
    /// Words describing the work (e.g. `review rust pull request`); all agents when left out.
    pub query: Option<Text<0, 500>>,
    /// Most results (default 20).
    pub limit: Option<Int<1, 100>>,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CatalogEntry {
    /// `@handle` to pass as `agent_id`, when it has one.
    pub handle: Option<String>,
    pub agent_id: String,
    pub name: String,
    /// What it does.
    pub description: String,
    pub categories: Vec<String>,
    /// `own` (this workspace's) or `public`.
    pub source: String,
    pub harness: String,
    pub model: String,
    pub pricing: Pricing,
    /// What starting it needs.
    pub requirements: Vec<String>,
    /// The hosts of the remote MCP servers it calls: where a session of it sends what the agent is given.
    /// Shown before you start a public agent; its owner chose them, and only the owner's secrets go there.
    pub remote_mcp_hosts: Vec<String>,
    /// How well it matched the query (higher is better).
    pub score: f64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Pricing {
    /// What one session costs this workspace up front, in cents.
    pub per_run_cents: i64,
    /// How model use is billed: `free` (echo), `per token` (openai) or `runner` (your own machine).
    pub usage: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CatalogResults {
    pub agents: Vec<CatalogEntry>,
}

fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 1).map(str::to_lowercase).collect()
}

/// How well an agent matches the query's words: the handle and name weigh most, then categories, then
/// the description; a word that only starts a field's word counts half.
pub fn score(a: &Agent, query: &[String]) -> f64 {
    if query.is_empty() {
        return 1.0;
    }
    let fields: [(f64, Vec<String>); 4] = [
        (3.0, words(a.handle.as_deref().unwrap_or_default())),
        (3.0, words(&a.name)),
        (2.0, a.categories.iter().flat_map(|c| words(c)).collect()),
        (1.0, words(&a.description)),
    ];
    query
        .iter()
        .map(|q| {
            fields
                .iter()
                .map(|(weight, ws)| {
                    if ws.iter().any(|w| w == q) {
                        *weight
                    } else if ws.iter().any(|w| w.starts_with(q.as_str())) {
                        weight / 2.0
                    } else {
                        0.0
                    }
                })
                .fold(0.0, f64::max)
        })
        .sum()
}

/// The distinct hosts of an agent's declared MCP servers (never their paths or secret names).
fn mcp_hosts(a: &Agent) -> Vec<String> {
    let mut hosts: Vec<String> = Vec::new();
    for server in &a.mcp_servers {
        let host =
            server["url"].as_str().and_then(|u| url::Url::parse(u).ok()).and_then(|u| u.host_str().map(str::to_owned));
        if let Some(h) = host.filter(|h| !hosts.contains(h)) {
            hosts.push(h);
        }
    }
    hosts
}

fn requirements(a: &Agent) -> Vec<String> {
    match a.harness.as_str() {
        "openai" => vec!["workspace secrets OPENAI_BASE_URL and OPENAI_API_KEY".into(), "wallet credit".into()],
        "runner" => vec!["a `sky runner` connected to the workspace".into()],
        "claude-code" => vec!["a `sky runner` connected to the workspace, on a machine with Claude Code".into()],
        "codex" => vec!["a `sky runner` connected to the workspace, on a machine with Codex".into()],
        _ => vec![],
    }
}

/// search_catalog
pub async fn search(cx: &Cx<'_>, p: SearchCatalog) -> Result<CatalogResults, ApiError> {
    let limit = p.limit.map_or(20, Int::get);
    let w = cx.workspace(p.workspace.as_deref())?;
    let query = words(p.query.as_deref().unwrap_or_default());
    let all = store::agents::catalog(cx.db(), &w.workspace_id).await?;
    let mut ranked: Vec<(f64, Agent)> =
        all.into_iter().map(|a| (score(&a, &query), a)).filter(|(s, _)| *s > 0.0).collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.session_count.cmp(&a.1.session_count)));
    let agents = ranked
        .into_iter()
        .take(limit as usize)
        .map(|(score, a)| {
            let own = a.workspace_id == w.workspace_id;
            CatalogEntry {
                handle: a.handle.as_ref().map(|h| format!("@{h}")),
                requirements: requirements(&a),
                remote_mcp_hosts: mcp_hosts(&a),
                pricing: Pricing {
                    per_run_cents: if own { 0 } else { a.price_cents_per_run },
                    usage: match a.harness.as_str() {
                        "openai" => "per token",
                        h if crate::rules::harness::Harness::word_on_runner(h) => "runner",
                        _ => "free",
                    }
                    .into(),
                },
                source: if own { "own" } else { "public" }.into(),
                agent_id: a.agent_id,
                name: a.name,
                description: a.description,
                categories: a.categories,
                harness: a.harness,
                model: a.model,
                score,
            }
        })
        .collect();
    Ok(CatalogResults { agents })
}
