//! Usage: the wallet's balance, spend per day over a chosen range (a chart drawn here as SVG), the same
//! spend by agent, model or key, the budgets tasks have, and money in: adding money and saving a card
//! (each goes on to Stripe's checkout page), the automatic top-up and the receipts.

use super::health::one;
use super::{list, Page};
use crate::console::layout::{action, hidden, money, time};
use crate::console::render::s;
use crate::console::Ctx;
use crate::error::ApiError;
use maud::{html, Markup};
use serde_json::{json, Value};

const GROUPS: &[(&str, &str)] =
    &[("agent", "Agent"), ("model", "Model"), ("api_key", "API key"), ("session", "Session")];

/// Spend per day as bars, every day of the range shown (days without spend are empty).
fn chart(days: &[Value], from: &str, to: &str) -> Markup {
    let (Some(start), Some(end)) = (crate::rules::time::parse_day(from), crate::rules::time::parse_day(to)) else {
        return html! {};
    };
    let n = (((end - start) / crate::rules::time::DAY_MS) + 1).clamp(1, 400) as usize;
    let cents = |i: usize| {
        let day = crate::rules::time::format_day(start + i as i64 * crate::rules::time::DAY_MS);
        days.iter().find(|d| s(&d["key"]) == day).and_then(|d| d["cents"].as_i64()).unwrap_or(0)
    };
    let max = (0..n).map(cents).max().unwrap_or(0).max(1);
    let (w, h, left, bottom) = (720.0, 200.0, 48.0, 22.0);
    let slot = (w - left) / n as f64;
    let y0 = h - bottom;
    // Elements inside SVG are closed explicitly (`{}`): HTML parses a bare `<line>` there as left open.
    html! {
        svg.chart viewBox={ "0 0 " (w) " " (h) } role="img" aria-label="spend per day" {
            line.axis x1=(left) y1=(y0) x2=(w) y2=(y0) {}
            text x="4" y="14" { (money(max)) }
            text x="4" y=(y0) { "$0" }
            @for i in 0..n {
                @let c = cents(i);
                @let bar = (h - bottom - 10.0) * c as f64 / max as f64;
                @let x = left + i as f64 * slot + slot * 0.15;
                @let day = crate::rules::time::format_day(start + i as i64 * crate::rules::time::DAY_MS);
                rect.bar x=(one(x)) y=(one(h - bottom - bar)) width=(one((slot * 0.7).max(1.0))) height=(one(bar)) {
                    title { (day) ": " (money(c)) }
                }
                @if n <= 14 || i % (n / 7).max(1) == 0 {
                    text x=(one(x)) y=(h - 6.0) { (&day[5..]) }
                }
            }
        }
    }
}

pub async fn page(p: &Ctx<'_>) -> Result<Page, ApiError> {
    let by = p.query("by").filter(|b| GROUPS.iter().any(|(g, _)| g == b)).unwrap_or_else(|| "agent".into());
    let mut range = json!({ "workspace": p.ws.slug });
    for k in ["from", "to"] {
        if let Some(v) = p.query(k) {
            range[k] = json!(v);
        }
    }
    let mut per_day = range.clone();
    per_day["group_by"] = json!("day");
    let days = p.call("get_usage", per_day).await?;
    let mut grouped = range;
    grouped["group_by"] = json!(by);
    let groups = p.call("get_usage", grouped).await?;
    let tasks = p.call("list_tasks", json!({ "workspace": p.ws.slug, "limit": 100 })).await?;
    let budgeted: Vec<&Value> = list(&tasks, "tasks").iter().filter(|t| t["budget_cents"].is_i64()).collect();
    let total = groups["total_cents"].as_i64().unwrap_or(0).max(1);
    let receipts = p.call("list_receipts", json!({ "workspace": p.ws.slug })).await?;
    let activity = p.call("get_metrics", json!({ "workspace": p.ws.slug, "window": "day" })).await?;
    Ok(Page {
        title: "Usage".into(),
        nav: "/usage",
        main: html! {
            h1 { "Usage" }
            p { "Balance " strong data-balance { (money(days["balance_cents"].as_i64().unwrap_or(0))) }
                " · spent " (money(days["total_cents"].as_i64().unwrap_or(0))) " from " (s(&days["from"])) " to " (s(&days["to"])) }
            form.row method="get" action=(p.link("/usage")) {
                label { "From" input type="date" name="from" value=(s(&days["from"])); }
                label { "To" input type="date" name="to" value=(s(&days["to"])); }
                label { "By" select name="by" { @for (g, label) in GROUPS { option value=(g) selected[*g == by] { (label) } } } }
                button type="submit" { "Show" }
            }
            div data-live="usage-chart" { (chart(list(&days, "groups"), s(&days["from"]), s(&days["to"]))) }
            h2 { "Activity, last day" }
            p.muted { "Calls, errors, latency, turns and spend every 15 minutes; longer windows and per-agent numbers are on "
                a href=(p.link("/health")) { "Health" } "." }
            (super::health::summary(&activity["totals"]))
            (super::health::charts(&activity))
            h2 { "By " (GROUPS.iter().find(|(g, _)| *g == by).map_or("agent", |(_, l)| l).to_lowercase()) }
            table data-live="usage-groups" {
                thead { tr { th { "Who" } th.num { "Spend" } th { "Share" } th.num { "Tokens in / out" } } }
                tbody {
                    @for g in list(&groups, "groups") {
                        tr {
                            td { code { (g["key"].as_str().unwrap_or("(none)")) } }
                            td.num { (money(g["cents"].as_i64().unwrap_or(0))) }
                            td { meter min="0" max=(total) value=(g["cents"].as_i64().unwrap_or(0)) {} }
                            td.num { (g["input_tokens"].as_i64().unwrap_or(0)) " / " (g["output_tokens"].as_i64().unwrap_or(0)) }
                        }
                    }
                    @if list(&groups, "groups").is_empty() { tr { td colspan="4" { span.muted { "No spend in this range." } } } }
                }
            }
            (money_in(p, &receipts))
            h2 { "Budgets" }
            @if budgeted.is_empty() { p.muted { "No task has a budget. Set one on a task's page." } }
            ul { @for t in budgeted {
                li { a href=(p.link(&format!("/tasks/{}", s(&t["task_id"])))) { (s(&t["title"])) } " "
                     (crate::console::render::spend(t["cost_cents"].as_i64().unwrap_or(0), t["budget_cents"].as_i64())) }
            } }
        },
    })
}

/// Adding money, saving a card, the automatic top-up and the receipts. The buttons go on to Stripe's
/// checkout page; without Stripe the page says so instead of offering them.
fn money_in(p: &Ctx<'_>, r: &Value) -> Markup {
    let config = &p.cx.env.config;
    let billing = config.stripe_secret_key.is_some() && config.stripe_webhook_secret.is_some();
    let auto = &r["auto_top_up"];
    let slug = p.ws.slug.as_str();
    html! {
        h2 { "Money in" }
        @if p.query("checkout").as_deref() == Some("done") {
            p.muted role="status" { "Thank you: the balance grows as soon as Stripe reports the payment." }
        }
        @if billing {
            form.row method="post" action=(p.link("/op/top_up")) {
                (hidden(p))
                input type="hidden" name="workspace" value=(slug);
                label { "Cents" input type="number" name="amount_cents" min="500" max="100000" step="100" value="2000"; }
                button.primary type="submit" disabled[!p.can_write()] { "Add money" }
            }
            p {
                (action(p, "save_card", &[("workspace", slug)], "Save a card", "", None)) " "
                @if r["card_saved"] == true { span.muted { "A card is saved." } } @else { span.muted { "No card saved." } }
            }
            @if r["card_saved"] == true {
                form.row method="post" action=(p.link("/op/set_auto_top_up")) {
                    (hidden(p))
                    input type="hidden" name="workspace" value=(slug);
                    input type="hidden" name="enabled" value="true";
                    label { "Top up when under (cents)" input type="number" name="threshold_cents" min="0" max="100000"
                        value=(auto["threshold_cents"].as_i64().unwrap_or(500)); }
                    label { "by (cents)" input type="number" name="amount_cents" min="500" max="100000"
                        value=(auto["amount_cents"].as_i64().unwrap_or(2000)); }
                    button type="submit" disabled[!p.can_write()] { "Set automatic top-up" }
                }
                @if auto["enabled"] == true {
                    p { "Automatic top-up is on" @if auto["pending"] == true { " (one is on its way)" } ". "
                        (action(p, "set_auto_top_up", &[("workspace", slug), ("enabled", "false")], "Turn it off", "link", None)) }
                }
                @if let Some(e) = auto["last_error"].as_str() { p.error role="alert" { "The last automatic top-up failed: " (e) } }
            }
        } @else {
            p.muted { "Billing is not configured on this deployment: the operator sets STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET." }
        }
        h3 { "Receipts" }
        table data-live="receipts" {
            thead { tr { th { "When" } th.num { "Amount" } th { "Source" } th { "Stripe" } } }
            tbody {
                @for x in list(r, "receipts") {
                    tr { td { (time(x["created_ms"].as_i64().unwrap_or(0))) } td.num { (money(x["cents"].as_i64().unwrap_or(0))) }
                         td { (s(&x["source"])) } td { code { (x["stripe_object_id"].as_str().unwrap_or("")) } } }
                }
                @if list(r, "receipts").is_empty() { tr { td colspan="4" { span.muted { "No money added yet." } } } }
            }
        }
    }
}
