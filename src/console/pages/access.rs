//! Access: the workspace's targets and whether each is connected, the policies that decide requests
//! without a person, the grants in force (revocable), and the audit log, filtered.

use super::{empty, Page};
use crate::console::layout::{action, hidden, time};
use crate::console::Ctx;
use crate::error::ApiError;
use crate::ops::audit::ListAudit;
use crate::ops::call;
use crate::ops::connectors::ListConnectors;
use crate::ops::grants::ListGrants;
use crate::ops::name;
use crate::rules::params::Int;
use crate::store::audit::AuditRow;
use crate::store::connectors::ConnectorRow;
use maud::{html, Markup};

const PROVIDERS: &[&str] = &["vercel", "aws", "gcp", "supabase", "github", "ssh"];
const ENVS: &[&str] = &["prod", "staging", "preview", "scm"];
const SCOPES: &[&str] = &["read", "write", "deploy", "delete"];

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let workspace = Some(p.ws.slug.clone());
    let c = call::list_connectors(p.cx, ListConnectors { workspace: workspace.clone() }).await?;
    let grants = call::list_grants(p.cx, ListGrants { workspace: workspace.clone() }).await?.grants;
    let listed = ListAudit { workspace, limit: Some(const { Int::new(500) }) };
    let audit = call::list_audit(p.cx, listed).await?.entries;
    let targets = &c.connectors;
    let name_of = |id: &str| targets.iter().find(|t| t.connector_id == id).map_or(id.to_owned(), |t| t.name.clone());
    let (want_action, want_target) = (p.query("action"), p.query("target"));
    let target_of = |e: &AuditRow| e.connector_id.clone().unwrap_or_default();
    let entries: Vec<&AuditRow> = audit
        .iter()
        .filter(|e| want_action.as_deref().is_none_or(|a| e.action == a))
        .filter(|e| want_target.as_deref().is_none_or(|t| target_of(e) == t))
        .take(200)
        .collect();
    let mut actions: Vec<&str> = audit.iter().map(|e| e.action.as_str()).collect();
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
                        @let expired = t.credentials_expire_ms.is_some_and(|e| e <= now);
                        tr { td { strong { (t.name) } } td { (t.provider) } td { (t.env) }
                             td { @if !t.connected { span.state.idle { "not connected" } } @else if expired { span.state.failed { "expired" }
                                      (reconnect(p, t, off)) }
                                  @else { span.state.running { "connected" } } }
                             td data-scoped=(t.scoped) {
                                 @if t.scoped { "narrowed to each grant" }
                                 @else if t.connected { "the connection's own" br; span.muted.small { (t.unscoped_reason.as_deref().unwrap_or_default()) } } }
                             td { @if let Some(cmd) = &t.deploy_command { code { (cmd) } } }
                             td { (action(p, name::delete_connector, &[("connector_id", &t.connector_id)], "Remove", "link", Some("Remove this target and its credentials?"))) } }
                    } }
                }
            }
            details {
                summary { "Connect a target" }
                form.card method="post" action=(p.action_url(name::connect_target)) {
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
            @if c.policies.is_empty() { p.muted { "None: every request asks a person." } }
            ul { @for pol in &c.policies {
                li { code { (pol.scope) } " on " (if pol.connector_id.is_empty() { "every target".to_owned() } else { name_of(&pol.connector_id) })
                     ": " strong { (pol.decision) } }
            } }
            form.row method="post" action=(p.action_url(name::set_policy)) {
                (hidden(p))
                input type="hidden" name="workspace" value=(p.ws.slug);
                select name="connector_id" aria-label="target" disabled[off] {
                    option value="" { "every target" }
                    @for t in targets { option value=(t.connector_id) { (t.name) } }
                }
                select name="scope" aria-label="scope" disabled[off] { @for v in SCOPES { option { (v) } } }
                select name="decision" aria-label="decision" disabled[off] { option value="ask" { "ask" } option value="allow" { "allow" } option value="deny" { "deny" } }
                button type="submit" disabled[off] { "Set policy" }
            }
            h2 { "Grants in force" }
            @if grants.is_empty() { p.muted { "None." } }
            @else {
                table data-live="grants" {
                    thead { tr { th { "Target" } th { "Scopes" } th { "Session" } th { "Until" } th { "Decided by" } th {} } }
                    tbody { @for g in &grants {
                        tr { td { (name_of(&g.connector_id)) }
                             td { @for sc in &g.scopes { code { (sc) } " " } }
                             td { @if g.persistent { "every session" } @else { a href=(p.link(&format!("/sessions/{}", g.session_id))) { (g.session_id) } } }
                             td { @match g.expires_ms { Some(ms) => (time(ms)), None => "until revoked" } }
                             td { (g.decided_by.as_deref().unwrap_or_default()) }
                             td { (action(p, name::revoke_grant, &[("grant_id", &g.grant_id), ("workspace", &p.ws.slug)], "Revoke", "danger", Some("Revoke this grant now?"))) } }
                    } }
                }
            }
            h2 { "Audit log" }
            form.row method="get" action=(p.link("/access")) {
                select name="action" aria-label="action" { option value="" { "every action" } @for a in &actions { option selected[want_action.as_deref() == Some(*a)] { (a) } } }
                select name="target" aria-label="target" { option value="" { "every target" }
                    @for t in targets { option value=(t.connector_id) selected[want_target.as_deref() == Some(t.connector_id.as_str())] { (t.name) } } }
                button type="submit" { "Filter" }
            }
            table data-live="audit" {
                thead { tr { th { "When" } th { "Action" } th { "Target" } th { "Session" } th { "Detail" } } }
                tbody {
                    @for e in &entries {
                        tr { td { (time(e.created_ms)) } td { code { (e.action) } }
                             td { (name_of(&target_of(e))) } td.small { (e.session_id.as_deref().unwrap_or_default()) } td { span.verbatim { (e.detail) } } }
                    }
                    @if entries.is_empty() { tr { td colspan="5" { span.muted { "Nothing recorded." } } } }
                }
            }
        },
    })
}

/// An expired target's credentials given again, in place: the same name, provider and environment, so
/// its policies and its grants' history stay.
fn reconnect(p: &Ctx<'_>, t: &ConnectorRow, off: bool) -> Markup {
    html! {
        details.reconnect {
            summary { "Reconnect" }
            form.card method="post" action=(p.action_url(name::connect_target)) {
                (hidden(p))
                input type="hidden" name="workspace" value=(p.ws.slug);
                input type="hidden" name="name" value=(t.name);
                input type="hidden" name="provider" value=(t.provider);
                input type="hidden" name="env" value=(t.env);
                label { "New credentials (JSON, as when connecting)" textarea.mono name="credentials" rows="3" autocomplete="off" required disabled[off] {} }
                div.row { button.primary type="submit" disabled[off] { "Reconnect" } }
            }
        }
    }
}
