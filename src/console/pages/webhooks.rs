//! Webhooks: the workspace's endpoints (never their secrets), their newest deliveries (a failed one with
//! the receiver's last answer), and, for owners and admins, creating, testing, rotating and deleting.

use super::{empty, Page};
use crate::console::layout::{action, hidden, time};
use crate::console::render;
use crate::console::Ctx;
use crate::cx::Role;
use crate::error::ApiError;
use crate::ops::name;
use crate::ops::{call, webhooks::ListWebhooks};
use crate::rules::webhooks::EVENTS;
use maud::html;

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let listed = call::list_webhooks(p.cx, ListWebhooks { workspace: Some(p.ws.slug.clone()) }).await?;
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
                @if listed.webhooks.is_empty() { (empty("No endpoints. An endpoint receives the events you choose.")) }
                @for w in &listed.webhooks {
                    @let id = w.webhook_id.as_str();
                    article.card data-webhook=(id) {
                        header { h3 { code { (w.url) } } span.muted { (w.format) } }
                        @if !w.description.is_empty() { p.muted.small { (w.description) } }
                        p.small { @for e in &w.events { code { (e) } " " } }
                        @if let Some(until) = w.previous_secret_until_ms {
                            p.small.muted { "The previous secret signs too until " (time(until)) "." }
                        }
                        @if !off { div.row {
                            (action(p, name::test_webhook, &[("webhook_id", id), ("workspace", &p.ws.slug)], "Send a test event", "primary", None))
                            (action(p, name::rotate_webhook_secret, &[("webhook_id", id), ("workspace", &p.ws.slug)], "Rotate secret", "", Some("Make a new signing secret? The current one keeps signing beside it for 24 hours.")))
                            (action(p, name::delete_webhook, &[("webhook_id", id), ("workspace", &p.ws.slug)], "Delete", "danger", Some("Delete this endpoint? Nothing more is sent to it.")))
                        } }
                    }
                }
            }
            h2 { "Deliveries" }
            @if listed.deliveries.is_empty() { (empty("Nothing sent yet.")) }
            @else {
                table data-live="deliveries" {
                    thead { tr { th { "Event" } th { "Id" } th { "Status" } th.num { "Attempts" } th { "Last answer" } th { "When" } } }
                    tbody { @for d in &listed.deliveries {
                        tr data-delivery=(d.delivery_id) {
                            td { code { (d.event) } } td { code.small { (d.event_id) } }
                            td { (render::state(d.status.as_str())) }
                            td.num { (d.attempts) }
                            td.small { @if let Some(code) = d.last_status { "HTTP " (code) " " }
                                span.muted { (d.last_body.as_deref().unwrap_or("")) } }
                            td { (time(d.updated_ms)) }
                        }
                    } }
                }
            }
            @if !off {
                h2 { "Add an endpoint" }
                form.card method="post" action=(p.action_url(name::create_webhook)) {
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
