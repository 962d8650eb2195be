//! Agents: the list, a form to create one, and one agent's page to edit it (harness, model,
//! instructions, remote MCP servers) and publish it to the catalog.

use super::{empty, Page};
use crate::console::layout::{action, hidden, money};
use crate::console::Ctx;
use crate::error::ApiError;
use crate::ops::agents::{Agent, GetAgent, ListAgents};
use crate::ops::call;
use crate::ops::name;
use crate::rules::harness::{Harness, ToolApproval};
use crate::rules::params::{param, Int};
use maud::{html, Markup};

const HARNESSES: &[(&str, &str)] = &[
    ("echo", "echo — free and deterministic, for trying things"),
    ("openai", "openai — any OpenAI-compatible model"),
    ("claude-code", "claude-code — Claude Code on your machine (sky runner)"),
    ("codex", "codex — Codex on your machine (sky runner)"),
    ("runner", "runner — your own command on your machine (sky runner -- …)"),
];

const APPROVALS: &[(&str, &str)] = &[
    ("outside_folder", "outside_folder — shell commands and anything outside the turn's folder ask"),
    ("every_change", "every_change — every edit and command asks"),
    ("none", "none — nothing asks (admins only)"),
];

/// The agent's tool approval policy in words, for a Claude Code or Codex agent.
fn approval_policy(a: &Agent) -> Option<&'static str> {
    let harness = Harness::from_word(&a.harness).filter(|h| matches!(h, Harness::ClaudeCode | Harness::Codex))?;
    let approval = ToolApproval::from_word(&a.tool_approval).unwrap_or(ToolApproval::OutsideFolder);
    Some(approval.says(harness))
}

/// The fields of an agent, empty for a new one (which starts as echo).
fn fields(p: &Ctx<'_>, agent: Option<&Agent>) -> Markup {
    let off = !p.can_write();
    let servers = match agent.map(|a| &a.mcp_servers).filter(|v| !v.is_empty()) {
        Some(v) => serde_json::to_string_pretty(v).unwrap_or_default(),
        None => String::new(),
    };
    let categories = agent.map(|a| a.categories.join("\n")).unwrap_or_default();
    let text = |field: fn(&Agent) -> &str| agent.map_or("", field);
    let (harness, model) = agent.map_or(("echo", "echo-1"), |a| (&a.harness, &a.model));
    html! {
        label { "Name" input type="text" name="name" required maxlength="100" value=(text(|a| &a.name)) disabled[off]; }
        label { "Handle (for the catalog, without @)" input type="text" name="handle" maxlength="40" value=(text(|a| a.handle.as_deref().unwrap_or_default())) disabled[off]; }
        label { "Harness" select name="harness" disabled[off] {
            @for (h, label) in HARNESSES { option value=(h) selected[harness == *h] { (label) } }
        } }
        label { "Tool approval (Claude Code and Codex)" select name="tool_approval" disabled[off] {
            @for (w, label) in APPROVALS { option value=(w) selected[text(|a| &a.tool_approval) == *w] { (label) } }
        } }
        label { "Model" input type="text" name="model" required maxlength="100" value=(model) placeholder="e.g. gpt-4.1-mini" disabled[off]; }
        label { "Instructions" textarea name="instructions" maxlength="20000" rows="6" disabled[off] { (text(|a| &a.instructions)) } }
        label { "Remote MCP servers (JSON: [{\"name\", \"url\", \"bearer_secret\"}])"
            textarea.mono name="mcpServers" rows="4" disabled[off] { (servers) } }
        label { "Description (for the catalog)" textarea name="description" maxlength="1000" rows="2" disabled[off] { (text(|a| &a.description)) } }
        label { "Categories (one per line)" textarea name="categories" rows="2" disabled[off] { (categories) } }
        input type="hidden" name="is_public" value="false";
        label.check { input type="checkbox" name="is_public" value="true" checked[agent.is_some_and(|a| a.is_public)] disabled[off]; "Publish to the catalog (every workspace can start it by @handle)" }
        label { "Price per run for other workspaces, in cents" input type="number" name="price_cents_per_run" min="0" max="100000"
            value=(agent.map_or(0, |a| a.price_cents_per_run)) disabled[off]; }
    }
}

pub async fn page(p: &Ctx<'_>, agent_id: Option<&str>) -> Result<Page, ApiError> {
    if let Some(id) = agent_id {
        let a = call::get_agent(p.cx, GetAgent { agent_id: param("agent_id", id)?, workspace: None }).await?;
        return Ok(Page {
            title: a.name.clone(),
            nav: "/agents",
            main: html! {
                h1 { (a.name) @if let Some(h) = &a.handle { " " span.muted { "@" (h) } } }
                p.muted { (a.session_count) " sessions"
                    @if a.is_public { " · in the catalog at " (money(a.price_cents_per_run)) " a run" } }
                @if let Some(policy) = approval_policy(&a) {
                    p data-policy=(a.tool_approval) { strong { "Tool approval: " } (policy) }
                }
                form.card method="post" action=(p.action_url(name::update_agent)) {
                    (hidden(p))
                    input type="hidden" name="agent_id" value=(id);
                    (fields(p, Some(&a)))
                    div.row { button.primary type="submit" disabled[!p.can_write()] { "Save" } }
                }
                (action(p, name::delete_agent, &[("agent_id", id)], "Delete agent", "danger", Some("Delete this agent? Its past sessions stay.")))
            },
        });
    }
    let listed = ListAgents { workspace: Some(p.ws.slug.clone()), limit: Some(const { Int::new(200) }), offset: None };
    let agents = call::list_agents(p.cx, listed).await?.agents;
    Ok(Page {
        title: "Agents".into(),
        nav: "/agents",
        main: html! {
            h1 { "Agents" }
            @if agents.is_empty() { (empty("No agents yet: create one below.")) }
            @else {
                table data-live="agents" {
                    thead { tr { th { "Name" } th { "Harness" } th { "Model" } th.num { "Sessions" } } }
                    tbody { @for a in &agents {
                        tr { td { a href=(p.link(&format!("/agents/{}", a.id))) { (a.name) } }
                             td { (a.harness) } td { code { (a.model) } } td.num { (a.session_count) } }
                    } }
                }
            }
            h2 { "Create an agent" }
            form.card method="post" action=(p.action_url(name::create_agent)) {
                (hidden(p))
                input type="hidden" name="workspace" value=(p.ws.slug);
                (fields(p, None))
                div.row { button.primary type="submit" disabled[!p.can_write()] { "Create agent" } }
            }
        },
    })
}
