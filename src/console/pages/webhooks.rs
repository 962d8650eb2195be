//! Webhooks: the workspace's endpoints (never their secrets), their newest deliveries (a failed one with
//! the receiver's last answer), and, for owners and admins, creating, testing, rotating and deleting.

use super::{empty, list, Page};
use crate::console::layout::{action, hidden, time};
use crate::console::render::{self, s};
use crate::console::Ctx;
use crate::cx::Role;
use crate::error::ApiError;
use crate::rules::webhooks::EVENTS;
use maud::html;
use serde_json::json;

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let listed = p.call("list_webhooks", json!({ "workspace": p.ws.slug })).await?;
    // Managing endpoints is for owners and admins (the operations refuse anyone else too).
    let off = !p.can_write() || p.ws.role < Role::Admin;
    Ok(Page {
        title: "Webhooks".into(),
        nav: "/webhooks",
        main: html! {
            h1 { "Webhooks" }
            p.muted { "Events are POSTed to each endpoint signed by the Standard Webhooks convention "
                "(webhook-id, webhook-timestamp, webhook-signature), retried for about a day with the same id, then marked failed." }
            section data-live="webhooks" {
                @if list(&listed, "webhooks").is_empty() { (empty("No endpoints. An endpoint receives the events you choose.")) }
                @for w in list(&listed, "webhooks") {
                    @let id = s(&w["webhook_id"]);
                    article.card data-webhook=(id) {
                        header { h3 { code { (s(&w["url"])) } } span.muted { (s(&w["format"])) } }
                        @if !s(&w["description"]).is_empty() { p.muted.small { (s(&w["description"])) } }
                        p.small { @for e in list(w, "events") { code { (s(e)) } " " } }
                        @if let Some(until) = w["previous_secret_until_ms"].as_i64() {
                            p.small.muted { "The previous secret signs too until " (time(until)) "." }
                        }
                        @if !off { div.row {
                            (action(p, "test_webhook", &[("webhook_id", id), ("workspace", &p.ws.slug)], "Send a test event", "primary", None))
                            (action(p, "rotate_webhook_secret", &[("webhook_id", id), ("workspace", &p.ws.slug)], "Rotate secret", "", Some("Make a new signing secret? The current one keeps signing beside it for 24 hours.")))
                            (action(p, "delete_webhook", &[("webhook_id", id), ("workspace", &p.ws.slug)], "Delete", "danger", Some("Delete this endpoint? Nothing more is sent to it.")))
                        } }
                    }
                }
            }
            h2 { "Deliveries" }
            @if list(&listed, "deliveries").is_empty() { (empty("Nothing sent yet.")) }
            @else {
                table data-live="deliveries" {
                    thead { tr { th { "Event" } th { "Id" } th { "Status" } th.num { "Attempts" } th { "Last answer" } th { "When" } } }
                    tbody { @for d in list(&listed, "deliveries") {
                        tr data-delivery=(s(&d["delivery_id"])) {
                            td { code { (s(&d["event"])) } } td { code.small { (s(&d["event_id"])) } }
                            td { (render::state(s(&d["status"]))) }
                            td.num { (d["attempts"].as_i64().unwrap_or(0)) }
                            td.small { @if let Some(code) = d["last_status"].as_i64() { "HTTP " (code) " " }
                                span.muted { (d["last_body"].as_str().unwrap_or("")) } }
                            td { (time(d["updated_ms"].as_i64().unwrap_or(0))) }
                        }
                    } }
                }
            }
            @if !off {
                h2 { "Add an endpoint" }
                form.card method="post" action=(p.link("/op/create_webhook")) {
                    (hidden(p))
                    input type="hidden" name="workspace" value=(p.ws.slug);
                    label { "URL (https, a public host)" input type="url" name="url" required maxlength="2000"; }
                    fieldset { legend { "Events" }
                        @for e in EVENTS.iter().filter(|e| **e != "webhook.test") {
                            label.check { input type="checkbox" name="events" value=(e) checked[*e == "request.opened"]; " " code { (e) } }
                        }
                    }
                    label { "Format" select name="format" {
                        option value="standard" selected { "Standard Webhooks JSON" }
                        option value="slack" { "Slack message (an incoming-webhook URL)" }
                    } }
                    label { "Description" input type="text" name="description" maxlength="200"; }
                    div.row { button.primary type="submit" { "Add endpoint" } }
                }
            } @else {
                p.muted { "Owners and admins add, test, rotate and delete endpoints." }
            }
        },
    })
}
