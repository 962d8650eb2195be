//! Agents: the list, a form to create one, and one agent's page to edit it (harness, model,
//! instructions, remote MCP servers) and publish it to the catalog.

use super::{empty, list, Page};
use crate::console::layout::{action, hidden, money};
use crate::console::render::s;
use crate::console::Ctx;
use crate::error::ApiError;
use crate::rules::harness::{Harness, ToolApproval};
use maud::{html, Markup};
use serde_json::{json, Value};

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
fn approval_policy(a: &Value) -> Option<&'static str> {
    let harness = Harness::from_word(s(&a["harness"])).filter(|h| matches!(h, Harness::ClaudeCode | Harness::Codex))?;
    let approval = ToolApproval::from_word(s(&a["tool_approval"])).unwrap_or(ToolApproval::OutsideFolder);
    Some(approval.says(harness))
}

/// The fields of an agent, empty for a new one.
fn fields(p: &Ctx<'_>, a: &Value) -> Markup {
    let off = !p.can_write();
    let servers = match a["mcp_servers"].as_array().filter(|v| !v.is_empty()) {
        Some(v) => serde_json::to_string_pretty(v).unwrap_or_default(),
        None => String::new(),
    };
    let categories =
        a["categories"].as_array().map(|c| c.iter().map(s).collect::<Vec<_>>().join("\n")).unwrap_or_default();
    html! {
        label { "Name" input type="text" name="name" required maxlength="100" value=(s(&a["name"])) disabled[off]; }
        label { "Handle (for the catalog, without @)" input type="text" name="handle" maxlength="40" value=(s(&a["handle"])) disabled[off]; }
        label { "Harness" select name="harness" disabled[off] {
            @for (h, label) in HARNESSES { option value=(h) selected[s(&a["harness"]) == *h] { (label) } }
        } }
        label { "Tool approval (Claude Code and Codex)" select name="tool_approval" disabled[off] {
            @for (w, label) in APPROVALS { option value=(w) selected[s(&a["tool_approval"]) == *w] { (label) } }
        } }
        label { "Model" input type="text" name="model" required maxlength="100" value=(s(&a["model"])) placeholder="e.g. gpt-4.1-mini" disabled[off]; }
        label { "Instructions" textarea name="instructions" maxlength="20000" rows="6" disabled[off] { (s(&a["instructions"])) } }
        label { "Remote MCP servers (JSON: [{\"name\", \"url\", \"bearer_secret\"}])"
            textarea.mono name="mcpServers" rows="4" disabled[off] { (servers) } }
        label { "Description (for the catalog)" textarea name="description" maxlength="1000" rows="2" disabled[off] { (s(&a["description"])) } }
        label { "Categories (one per line)" textarea name="categories" rows="2" disabled[off] { (categories) } }
        input type="hidden" name="is_public" value="false";
        label.check { input type="checkbox" name="is_public" value="true" checked[a["is_public"] == true] disabled[off]; "Publish to the catalog (every workspace can start it by @handle)" }
        label { "Price per run for other workspaces, in cents" input type="number" name="price_cents_per_run" min="0" max="100000"
            value=(a["price_cents_per_run"].as_i64().unwrap_or(0)) disabled[off]; }
    }
}

pub async fn page(p: &Ctx<'_>, agent_id: Option<&str>) -> Result<Page, ApiError> {
    if let Some(id) = agent_id {
        let a = p.call("get_agent", json!({ "agent_id": id })).await?;
        return Ok(Page {
            title: s(&a["name"]).to_owned(),
            nav: "/agents",
            main: html! {
                h1 { (s(&a["name"])) @if let Some(h) = a["handle"].as_str() { " " span.muted { "@" (h) } } }
                p.muted { (a["session_count"].as_i64().unwrap_or(0)) " sessions"
                    @if a["is_public"] == true { " · in the catalog at " (money(a["price_cents_per_run"].as_i64().unwrap_or(0))) " a run" } }
                @if let Some(policy) = approval_policy(&a) {
                    p data-policy=(s(&a["tool_approval"])) { strong { "Tool approval: " } (policy) }
                }
                form.card method="post" action=(p.link("/op/update_agent")) {
                    (hidden(p))
                    input type="hidden" name="agent_id" value=(id);
                    (fields(p, &a))
                    div.row { button.primary type="submit" disabled[!p.can_write()] { "Save" } }
                }
                (action(p, "delete_agent", &[("agent_id", id)], "Delete agent", "danger", Some("Delete this agent? Its past sessions stay.")))
            },
        });
    }
    let agents = p.call("list_agents", json!({ "workspace": p.ws.slug, "limit": 200 })).await?;
    Ok(Page {
        title: "Agents".into(),
        nav: "/agents",
        main: html! {
            h1 { "Agents" }
            @if list(&agents, "agents").is_empty() { (empty("No agents yet: create one below.")) }
            @else {
                table data-live="agents" {
                    thead { tr { th { "Name" } th { "Harness" } th { "Model" } th.num { "Sessions" } } }
                    tbody { @for a in list(&agents, "agents") {
                        tr { td { a href=(p.link(&format!("/agents/{}", s(&a["id"])))) { (s(&a["name"])) } }
                             td { (s(&a["harness"])) } td { code { (s(&a["model"])) } } td.num { (a["session_count"].as_i64().unwrap_or(0)) } }
                    } }
                }
            }
            h2 { "Create an agent" }
            form.card method="post" action=(p.link("/op/create_agent")) {
                (hidden(p))
                input type="hidden" name="workspace" value=(p.ws.slug);
                (fields(p, &json!({ "harness": "echo", "model": "echo-1" })))
                div.row { button.primary type="submit" disabled[!p.can_write()] { "Create agent" } }
            }
        },
    })
}
