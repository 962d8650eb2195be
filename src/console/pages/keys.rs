//! Developer → API keys: the account's keys (never their secrets), creating one (scopes, optional
//! workspace lock; shown once) and revoking one.

use super::Page;
use crate::console::layout::{action, hidden, time};
use crate::console::Ctx;
use crate::error::ApiError;
use crate::ops::name;
use crate::ops::{accounts::ListKeys, call, connected_apps::ListConnectedApps};
use maud::html;

pub async fn page(p: &Ctx<'_>, _: Option<&str>) -> Result<Page, ApiError> {
    let keys = call::list_keys(p.cx, ListKeys {}).await?.keys;
    let apps = call::list_connected_apps(p.cx, ListConnectedApps {}).await?.apps;
    let off = !p.can_write();
    Ok(Page {
        title: "API keys".into(),
        nav: "/keys",
        main: html! {
            h1 { "API keys" }
            table data-live="keys" {
                thead { tr { th { "Name" } th { "Key" } th { "Scopes" } th { "Locked to" } th { "Last used" } th {} } }
                tbody { @for k in &keys {
                    @let revoked = k.revoked_ms.is_some();
                    tr data-key=(k.key_id) {
                        td { (k.name) } td { code { (k.prefix) "…" } } td { (k.scopes) }
                        td { (k.workspace.as_deref().unwrap_or("any workspace")) }
                        td { @match k.last_used_ms { Some(ms) => (time(ms)), None => span.muted { "never" } } }
                        td { @if revoked { span.state.done { "revoked" } }
                             @else if k.key_id == p.who.caller.key_id { span.muted.small { "this console's key" } }
                             @else { (action(p, name::revoke_key, &[("key_id", &k.key_id)], "Revoke", "danger", Some("Revoke this key? It is refused from the next call on."))) } }
                    }
                } }
            }
            h2 { "Connected apps" }
            @if apps.is_empty() {
                p.muted { "No app is connected. An MCP client that signs in with OAuth (Claude Code's " code { "/mcp" }
                    ", " code { "codex mcp login" } ") appears here." }
            } @else {
                table data-live="apps" {
                    thead { tr { th { "App" } th { "Redirects to" } th { "Workspace" } th { "Scopes" } th { "Last used" } th {} } }
                    tbody { @for a in &apps {
                        tr data-app=(a.grant_id) {
                            td { (a.client_name) } td { code { (a.redirect_host) } }
                            td { (a.workspace) } td { (a.scopes) }
                            td { @match a.last_used_ms { Some(ms) => (time(ms)), None => span.muted { "never" } } }
                            td { (action(p, name::disconnect_app, &[("grant_id", &a.grant_id)], "Disconnect", "danger", Some("Disconnect this app? Its tokens are refused from the next call on."))) }
                        }
                    } }
                }
            }
            h2 { "Create a key" }
            form.card method="post" action=(p.action_url(name::create_key)) {
                (hidden(p))
                label { "Name (what uses it)" input type="text" name="name" required maxlength="100" disabled[off]; }
                label { "Scopes" select name="scopes" disabled[off] {
                    option value="read" { "read — list and read" }
                    option value="write" selected { "read and write — also start sessions and change things" }
                } }
                label { "Lock to a workspace" select name="workspace" disabled[off] {
                    option value="" { "no lock: every workspace of yours" }
                    option value=(p.ws.slug) { "only " (p.ws.name) }
                } }
                div.row { button.primary type="submit" disabled[off] { "Create key" } }
            }
        },
    })
}
