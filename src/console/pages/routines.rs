//! Routines: each with its schedule, next fire (shown in its own time zone and the reader's), its last
//! fires and their sessions, and pause, resume, edit, delete and run now.

use super::{empty, Page};
use crate::console::layout::{action, hidden, money, time, verbatim};
use crate::console::render;
use crate::console::Ctx;
use crate::error::ApiError;
use crate::ops::agents::ListAgents;
use crate::ops::call;
use crate::ops::name;
use crate::ops::routines::{ListRoutines, Routine};
use crate::rules::ids;
use crate::rules::params::Int;
use maud::{html, Markup};

/// A time in the routine's own zone, as its cron reads it.
fn in_zone(ms: i64, tz: &str) -> String {
    let Some(zone) = crate::rules::zone::Zone::named(tz) else { return String::new() };
    let Some(at) = chrono::DateTime::from_timestamp_millis(ms) else { return String::new() };
    at.with_timezone(&zone).format("%a %Y-%m-%d %H:%M").to_string() + " " + tz
}

fn routine(p: &Ctx<'_>, r: &Routine) -> Markup {
    let fires = &r.recent_fires;
    let r = &r.routine;
    let id = r.routine_id.as_str();
    let enabled = r.enabled;
    let off = !p.can_write();
    html! {
        article.card.routine data-routine=(id) {
            header {
                h3 { (r.name) }
                @if enabled { span.state.running { "active" } } @else { span.state.idle { "paused" } }
                span.muted { code { (r.cron.as_deref().unwrap_or("run by hand")) } " · " (r.timezone) }
            }
            p.small {
                @match (r.next_fire_ms, enabled) {
                    (Some(next), true) => { "Next fire " strong { (in_zone(next, &r.timezone)) } " (" (time(next)) ")" },
                    (_, false) => span.muted { "Paused: the schedule does not fire it; Run now still does." },
                    _ => span.muted { "No schedule: it fires when run." },
                }
                @if let Some(b) = r.budget_cents { " · budget " (money(b)) " a run" }
            }
            p.muted.small { (verbatim(&r.message)) }
            @if !fires.is_empty() {
                table.small {
                    thead { tr { th { "Fire" } th { "Trigger" } th { "Status" } th { "Session" } th.num { "Spend" } } }
                    tbody { @for f in fires {
                        tr { td { (time(f.scheduled_ms)) } td { (f.trigger) }
                             td { (render::state(f.status.as_str())) @if let Some(e) = &f.error { " " span.muted { (e) } } }
                             td { @if let Some(sid) = &f.session_id { a href=(p.link(&format!("/sessions/{sid}"))) { (sid) } } }
                             td.num { (money(f.spent_cents.unwrap_or(0))) } }
                    } }
                }
            }
            div.row {
                (action(p, name::run_routine, &[("routine_id", id), ("idempotency_key", &ids::new_id("ik"))], "Run now", "primary", None))
                @if enabled { (action(p, name::update_routine, &[("routine_id", id), ("enabled", "false")], "Pause", "", None)) }
                @else { (action(p, name::update_routine, &[("routine_id", id), ("enabled", "true")], "Resume", "", None)) }
                (action(p, name::delete_routine, &[("routine_id", id)], "Delete", "danger", Some("Delete this routine? The sessions it started stay.")))
            }
            details {
                summary { "Edit" }
                form method="post" action=(p.action_url(name::update_routine)) {
                    (hidden(p))
                    input type="hidden" name="routine_id" value=(id);
                    label { "Name" input type="text" name="name" value=(r.name) maxlength="100" disabled[off]; }
                    label { "Cron (5 fields; empty: only by hand)" input type="text" name="cron" value=(r.cron.as_deref().unwrap_or("")) disabled[off]; }
                    label { "Time zone" input type="text" name="timezone" value=(r.timezone) disabled[off]; }
                    label { "Message" textarea name="message" maxlength="64000" disabled[off] { (r.message) } }
                    label { "Budget per run, cents (0: none)" input type="number" name="budget_cents" min="0"
                        value=(r.budget_cents.unwrap_or(0)) disabled[off]; }
                    div.row { button type="submit" disabled[off] { "Save" } }
                }
            }
        }
    }
}

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let workspace = Some(p.ws.slug.clone());
    let routines = call::list_routines(p.cx, ListRoutines { workspace: workspace.clone() }).await?.routines;
    let listed = ListAgents { workspace, limit: Some(const { Int::new(200) }), offset: None };
    let agents = call::list_agents(p.cx, listed).await?.agents;
    let off = !p.can_write();
    Ok(Page {
        title: "Routines".into(),
        nav: "/routines",
        main: html! {
            h1 { "Routines" }
            section data-live="routines" {
                @if routines.is_empty() { (empty("No routines. A routine starts an agent on a schedule.")) }
                @for r in &routines { (routine(p, r)) }
            }
            h2 { "Create a routine" }
            form.card method="post" action=(p.action_url(name::create_routine)) {
                (hidden(p))
                input type="hidden" name="workspace" value=(p.ws.slug);
                label { "Name" input type="text" name="name" required maxlength="100" disabled[off]; }
                label { "Agent" select name="agent_id" disabled[off] { @for a in &agents { option value=(a.id) { (a.name) } } } }
                label { "Message each fire sends" textarea name="message" required disabled[off] {} }
                label { "Cron (5 fields, e.g. 0 9 * * 1-5; empty: only by hand)" input type="text" name="cron" disabled[off]; }
                label { "Time zone" input type="text" name="timezone" value="UTC" disabled[off]; }
                div.row { button.primary type="submit" disabled[off] { "Create routine" } }
            }
        },
    })
}
