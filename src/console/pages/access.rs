//! Access: the workspace's targets and whether each is connected, the policies that decide requests
//! without a person, the grants in force (revocable), and the audit log, filtered.

use super::{empty, list, Page};
use crate::console::layout::{action, hidden, time};
use crate::console::render::s;
use crate::console::Ctx;
use crate::error::ApiError;
use maud::{html, Markup};
use serde_json::{json, Value};

const PROVIDERS: &[&str] = &["vercel", "aws", "gcp", "supabase", "github", "ssh"];
const ENVS: &[&str] = &["prod", "staging", "preview", "scm"];
const SCOPES: &[&str] = &["read", "write", "deploy", "delete"];

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let c = p.call("list_connectors", json!({ "workspace": p.ws.slug })).await?;
    let grants = p.call("list_grants", json!({ "workspace": p.ws.slug })).await?;
    let audit = p.call("list_audit", json!({ "workspace": p.ws.slug, "limit": 500 })).await?;
    let targets = list(&c, "connectors");
    let name_of = |id: &str| {
        targets.iter().find(|t| s(&t["connector_id"]) == id).map_or(id.to_owned(), |t| s(&t["name"]).to_owned())
    };
    let (want_action, want_target) = (p.query("action"), p.query("target"));
    let entries: Vec<&Value> = list(&audit, "entries")
        .iter()
        .filter(|e| want_action.as_deref().is_none_or(|a| s(&e["action"]) == a))
        .filter(|e| want_target.as_deref().is_none_or(|t| s(&e["connector_id"]) == t))
        .take(200)
        .collect();
    let mut actions: Vec<&str> = list(&audit, "entries").iter().map(|e| s(&e["action"])).collect();
    actions.sort_unstable();
    actions.dedup();
    let off = !p.can_write();
    let now = p.cx.now_ms;
    Ok(Page {
        title: "Access".into(),
        nav: "/access",
        main: html! {
            h1 { "Access" }
            h2 { "Targets" }
            @if targets.is_empty() { (empty("No targets. Connect one so agents can ask for access to it.")) }
            @else {
                table data-live="targets" {
                    thead { tr { th { "Target" } th { "Provider" } th { "Env" } th { "State" } th { "Credential" } th { "Deploy command" } th {} } }
                    tbody { @for t in targets {
                        @let expired = t["credentials_expire_ms"].as_i64().is_some_and(|e| e <= now);
                        tr { td { strong { (s(&t["name"])) } } td { (s(&t["provider"])) } td { (s(&t["env"])) }
                             td { @if t["connected"] != true { span.state.idle { "not connected" } } @else if expired { span.state.failed { "expired" }
                                      (reconnect(p, t, off)) }
                                  @else { span.state.running { "connected" } } }
                             td data-scoped=(t["scoped"] == true) {
                                 @if t["scoped"] == true { "narrowed to each grant" }
                                 @else if t["connected"] == true { "the connection's own" br; span.muted.small { (s(&t["unscoped_reason"])) } } }
                             td { @if let Some(cmd) = t["deploy_command"].as_str() { code { (cmd) } } }
                             td { (action(p, "delete_connector", &[("connector_id", s(&t["connector_id"]))], "Remove", "link", Some("Remove this target and its credentials?"))) } }
                    } }
                }
            }
            details {
                summary { "Connect a target" }
                form.card method="post" action=(p.link("/op/connect_target")) {
                    (hidden(p))
                    input type="hidden" name="workspace" value=(p.ws.slug);
                    label { "Name" input type="text" name="name" required maxlength="60" placeholder="web" disabled[off]; }
                    label { "Provider" select name="provider" disabled[off] { @for v in PROVIDERS { option { (v) } } } }
                    label { "Environment" select name="env" disabled[off] { @for v in ENVS { option { (v) } } } }
                    label { "Credentials (JSON: {\"env\": {\"VERCEL_TOKEN\": \"…\"}}, {\"ssh_private_key\": \"…\"}, or a GitHub App {\"app_id\": …, \"private_key\": \"…\", \"installation_id\": …}); sealed, never shown again"
                        textarea.mono name="credentials" rows="3" autocomplete="off" disabled[off] {} }
                    div.row { button.primary type="submit" disabled[off] { "Connect" } }
                }
            }
            h2 { "Policies" }
            @if list(&c, "policies").is_empty() { p.muted { "None: every request asks a person." } }
            ul { @for pol in list(&c, "policies") {
                li { code { (s(&pol["scope"])) } " on " (if s(&pol["connector_id"]).is_empty() { "every target".to_owned() } else { name_of(s(&pol["connector_id"])) })
                     ": " strong { (s(&pol["decision"])) } }
            } }
            form.row method="post" action=(p.link("/op/set_policy")) {
                (hidden(p))
                input type="hidden" name="workspace" value=(p.ws.slug);
                select name="connector_id" aria-label="target" disabled[off] {
                    option value="" { "every target" }
                    @for t in targets { option value=(s(&t["connector_id"])) { (s(&t["name"])) } }
                }
                select name="scope" aria-label="scope" disabled[off] { @for v in SCOPES { option { (v) } } }
                select name="decision" aria-label="decision" disabled[off] { option value="ask" { "ask" } option value="allow" { "allow" } option value="deny" { "deny" } }
                button type="submit" disabled[off] { "Set policy" }
            }
            h2 { "Grants in force" }
            @if list(&grants, "grants").is_empty() { p.muted { "None." } }
            @else {
                table data-live="grants" {
                    thead { tr { th { "Target" } th { "Scopes" } th { "Session" } th { "Until" } th { "Decided by" } th {} } }
                    tbody { @for g in list(&grants, "grants") {
                        tr { td { (name_of(s(&g["connector_id"]))) }
                             td { @for sc in list(g, "scopes") { code { (s(sc)) } " " } }
                             td { @if g["persistent"] == true { "every session" } @else { a href=(p.link(&format!("/sessions/{}", s(&g["session_id"])))) { (s(&g["session_id"])) } } }
                             td { @match g["expires_ms"].as_i64() { Some(ms) => (time(ms)), None => "until revoked" } }
                             td { (s(&g["decided_by"])) }
                             td { (action(p, "revoke_grant", &[("grant_id", s(&g["grant_id"])), ("workspace", &p.ws.slug)], "Revoke", "danger", Some("Revoke this grant now?"))) } }
                    } }
                }
            }
            h2 { "Audit log" }
            form.row method="get" action=(p.link("/access")) {
                select name="action" aria-label="action" { option value="" { "every action" } @for a in &actions { option selected[want_action.as_deref() == Some(*a)] { (a) } } }
                select name="target" aria-label="target" { option value="" { "every target" }
                    @for t in targets { option value=(s(&t["connector_id"])) selected[want_target.as_deref() == Some(s(&t["connector_id"]))] { (s(&t["name"])) } } }
                button type="submit" { "Filter" }
            }
            table data-live="audit" {
                thead { tr { th { "When" } th { "Action" } th { "Target" } th { "Session" } th { "Detail" } } }
                tbody {
                    @for e in &entries {
                        tr { td { (time(e["created_ms"].as_i64().unwrap_or(0))) } td { code { (s(&e["action"])) } }
                             td { (name_of(s(&e["connector_id"]))) } td.small { (s(&e["session_id"])) } td { span.verbatim { (s(&e["detail"])) } } }
                    }
                    @if entries.is_empty() { tr { td colspan="5" { span.muted { "Nothing recorded." } } } }
                }
            }
        },
    })
}

/// An expired target's credentials given again, in place: the same name, provider and environment, so
/// its policies and its grants' history stay.
fn reconnect(p: &Ctx<'_>, t: &Value, off: bool) -> Markup {
    html! {
        details.reconnect {
            summary { "Reconnect" }
            form.card method="post" action=(p.link("/op/connect_target")) {
                (hidden(p))
                input type="hidden" name="workspace" value=(p.ws.slug);
                input type="hidden" name="name" value=(s(&t["name"]));
                input type="hidden" name="provider" value=(s(&t["provider"]));
                input type="hidden" name="env" value=(s(&t["env"]));
                label { "New credentials (JSON, as when connecting)" textarea.mono name="credentials" rows="3" autocomplete="off" required disabled[off] {} }
                div.row { button.primary type="submit" disabled[off] { "Reconnect" } }
            }
        }
    }
}
